"""The doit task graph: the tasks dodo.py loads (tasks), the pipeline's task declarations and
actions (pipeline), the case library as the grade sees it (library), doit's checkpoint and the
progress display."""
