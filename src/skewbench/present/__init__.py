"""What the benchmark shows people: the report tables and HTML, the night's overview, the static
site, the live runs' page, the "what to pick" rules, the console summary of ``make run`` and the
plot helpers the families draw their figures with.

The modules, top to bottom (a module imports only from those below it; the import-linter
contract "Presentation layers" in ``pyproject.toml`` checks it):

* :mod:`~skewbench.present.site` -- the static site over MLflow's store;
* :mod:`~skewbench.present.console`, :mod:`~skewbench.present.overview`,
  :mod:`~skewbench.present.livepage` -- the console summary, the night's overview page, the
  live runs' "simulated vs measured" page;
* :mod:`~skewbench.present.reports` -- each results directory's tables and report;
* :mod:`~skewbench.present.picks` -- "what to pick" from each family's rules;
* :mod:`~skewbench.present.plotting` -- figures, number formats, strategy colours.

The package sits between the families (whose ``report`` modules draw with
:mod:`~skewbench.present.plotting` and declare :class:`~skewbench.present.picks.Rule` s) and the
generic layers below (results, MLflow tracking, the nightly trend's comparison,
:mod:`skewbench.trend`, which tracking applies to every logged run and so stays below).
"""
