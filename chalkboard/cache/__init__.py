"""The speed machinery: every piece of kept work, and what makes it stale.

Each kept thing is stored under a key of everything it reads; a key that differs is a miss, and a
miss does the work again. Each file of .cache/ carries the SHA-256 of its contents (sealed.py) and
is checked before it is read: one altered on disk is a miss too. Removing `.cache/` starts from
nothing; nothing here changes a number.

  symcache   .cache/sympy-KEY.pickle, and derivations/solved.pickle shipped with the project.
             SymPy's solves, limits, closed forms, board forms, identity checks, the audit's parsed
             expressions, the generated code, a snapshot of the registry, the dimension check's
             report, the printed formulas of the sources and the templates as Jinja2 compiled them.
             Stale when: any file of derivations/ or units/, chalkboard/audit/, evaluation/check.py,
             walk.py or compiled.py, typeset/printers.py or linebreak.py changes, or the SymPy, Pint or Python version
             does (`python3 -m chalkboard.cache.symcache --ship` makes the shipped file again); a
             template's code also when the template, its environment's options or Jinja2 change.
  figcache   .cache/figures/: each figure with the digest of every chip, model, price and file
             it read while drawing (traced), under its arguments (chip, model, --set, the claims'
             rules of thumb) and the program.
             Stale when: an entry it read changes, its arguments do, or the program (chalkboard/,
             derivations/, units/, library and Python versions, matplotlibrc, matplotlib's fonts).
  pdfcache   .cache/pdf/: the PDF under a hash of its Typst source, every figure, the date, the
             system's font files and Typst's version.
             Stale when: any of those changes (a comment edit or an HTML-template edit is not one).
  uptodate   OUT/.chalkboard-stamp: a fingerprint of the program, the data, claims, measurements,
             seeds and lecture files, the options, SOURCE_DATE_EPOCH and the library versions, with a
             hash of every file the build wrote.
             Stale when: any of those changes, or an output file was touched (`--force` builds anyway).
  forked     no store: the build's work done in forked processes beside it (figures, claims, the
             PDF), their results and errors sent back whole.
  incremental  no store: the edit loop's memory (chalkboard/watch/loop.py), kept for as long as its
             worker lives: each chip x model pair's evaluation and results.json lines, each claim's
             verdict, each measurement's bound, the claims as read, the shared tables, each under
             what it read (traced as figcache traces, or the pair's chip, model and shared tables).
             Stale when: what it read changes, or a setting of the data does; an edit to the
             program starts a new worker, with nothing kept.
"""
