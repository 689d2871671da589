"""Formulas and numbers as a reader sees them, the same on the terminal, the page and the PDF.

  printers.py      a SymPy expression as plain text, MathML and Typst, from one shared tree, with an
                   estimate of its set width
  linebreak.py     a display formula wider than the text set over lines, for MathML and Typst alike
  fmt.py           a number with its unit: significant figures, plurals, shares in percent

It reads the derivations' registry (each symbol's typeset name) and units/; the evaluation, the
audit, the report and the commands above it read it.
"""

# The line budget of a display formula, in printers.width_em's estimate: the PDF's text is 48.2 em of its
# 10 pt type and the page's column 56 em at 1280 px; above 30 em the estimate runs 3% or more over
# what Typst sets, so a line of 49 em fits. linebreak.py sets wider formulas over lines; pdf.py has
# Typst measure only those estimated from here up (the tests measure both). Declared here, where
# importing it loads nothing.
WIDTH_EM = 49.0
# The narrower budget of a phone's column: 366 px of text at 390 px, display formulas at 16 px, 22.9 em;
# a formula wider than this gets a second layout, which the page shows in place of the first on a
# phone (the PDF has only the first). tests/report/test_phone_and_print.py measures it in Chromium.
NARROW_EM = 18.5
