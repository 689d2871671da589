"""The process's life and its files: where the program's parts are, the signals and workers, and
the output folder written beside and exchanged in one step.

  home.py        where the program finds its parts, run from the checkout or installed: the project
                 folder, the code, the caches, the default output folder, the files the package carries
  lifecycle.py   signals held over the steps that must happen whole, what to remove if one ends the
                 process, workers that end with their parent
  staging.py     the output folder: built beside, exchanged with the old in one step

It imports only the standard library (staging.py: errors.py too). home.py is read by whatever finds
a file of the project (the caches, the audit, the report, the commands, the library);
lifecycle.py by the cache's forked workers, the edit loop and build.py's entry; staging.py by the
build and the edit loop.
"""
