"""Cells built from their specs: compile and link (cell), library cells (libcell), a project's
CMake build (cmake) and test suite (ctest), the pre-main refusal (premain), diagnostic control
as the preprocessor saw it (preprocessed), reuse across trees (reuse)."""
