"""The report, one room: what the build renders from the evaluated numbers and the audit.

  context.py         each question's steps (definition, closed form, numbers substituted, takeaway),
                     the summary tables and the featured set-up: the templates' context
  figures.py         every figure, registered in FIGURES with its caption and section; the
                     figures of chapters 3 to 6, of the layout sections and of the validation are
                     in figures_chapters.py, figures_pipeline.py, figures_prices.py,
                     figures_layout.py and figures_validation.py
  figure_process.py  the figures beside the build (Drawing): taken from .cache/figures/ where
                     what they read is unchanged, the others drawn by two forked processes that
                     take them from one queue, the first forked on standby as the command starts
                     (standby) and sent its order once the build knows what to draw
  drawing.py         what every figure draws with: the style, SVG drawn once and cropped, a swept
                     quantity, the hatch past what fits
  pdf.py             the PDF: formulas fitted to the text, the Typst compile, its date
  explorer.py        the page's live explorer: each definition printed as JavaScript by SymPy
  chip_reports.py    one report per chip (--all-hardware)
  results_json.py    results.json: every number of every chip x model pair, the same bytes every build

It reads the evaluation, the audit and the printers below it; only chalkboard/build.py and
chalkboard/api.py, above it, read it.
"""
