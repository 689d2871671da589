"""Formulas and numbers as a reader sees them, the same on the terminal, the page and the PDF.

  printers.py      a SymPy expression as plain text, MathML and Typst, from one shared tree, with an
                   estimate of its set width
  linebreak.py     a display formula wider than the text set over lines, for MathML and Typst alike
  fmt.py           a number with its unit: significant figures, plurals, shares in percent

It reads the derivations' registry (each symbol's typeset name) and units/; the evaluation, the
audit, the report and the commands above it read it.
"""
