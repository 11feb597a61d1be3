"""The project as loaded from disk: strict models of project.yml and model config, the event
schema, and :func:`load_project`, which turns a directory into a frozen :class:`Project`.

Nothing here imports pyspark: ``runner compile`` starts without a JVM.
"""

from __future__ import annotations

from runner.project.loader import ModelSource, Project, load_project

__all__ = ["ModelSource", "Project", "load_project"]
