"""The data, read and checked: the YAML files, a Hugging Face config.json, the lecture's notes.

  loader.py      hardware.yaml, models.yaml and prices.yaml loaded and validated: ``load`` gives
                 ``Data`` (its ``Entry``s, each ``Value`` with its ``Source``), any problem one
                 ``DataError`` line; ``fields`` (each field and the input it feeds), ``read_yaml``
                 and ``read_text`` (a user's file, read safely)
  safety.py      what a user's file may hold: the bounded YAML loader, control and bidirectional
                 characters escaped or made visible wherever text is shown
  hfconfig.py    a Hugging Face config.json read as a model entry (--model-config), data only; its
                 parameter counts are evaluated by evaluation/configmodel.py
  seeds.py       the lecture's notes: the citable places ('004_…txt:71', 'transcript@0:04:23') and
                 the text at each
  featured.py    the lecture's own scenario (a chip and a model), every command's default

It reads units/ and, for each field's unit and rules, the inputs derivations/ declares; everything
above it reads it. Importing this package loads nothing: each module is imported by its own name
(``from chalkboard.data.loader import load``), so that the featured ids cost the command line no
library.
"""
