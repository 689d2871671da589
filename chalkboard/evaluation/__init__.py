"""The numbers, one room: the derivations' expressions checked and evaluated for chips and models.

  walk.py          an expression walked with Pint quantities at its leaves (the dimension check's
                   placeholders, or numbers)
  check.py         the dimension check of every definition and equation (kept with SymPy's work)
  evaluate.py      Scenario: one chip x model x workload, its values and sweeps
  inputs.py        where each of its inputs gets its value, recorded with its source
  defaults.py      what a Scenario is given: --set checked, the serving defaults, the layout a stated
                   degree holds, the quantities one input settles (one chip: no all-reduce)
  compiled.py      each definition lambdified once: floats in base units, Pint only at the edges
  settings.py      what --set accepts and what a set-up keeps coherent
  fit.py           does a set-up fit its HBM (even, pipelined, laid out)
  dependence.py    what a quantity reads, and which fit judges it
  regimes.py       the roofline regime of a set-up
  layouts.py       which form a command answers: the deployed layout's or the lecture's
  configmodel.py   a model read from a Hugging Face config.json (data/hfconfig.py) given its
                   parameter counts, evaluated from its dimensions
  results.py       every chip x model at once
  sweep.py         `eval --sweep` and `compare`
  tables.py        their rows as text, CSV and JSON

It reads the data and the derivations below it; the audit, the validation, the planner, the
report and the commands above it read it.
"""
