"""Sphinx configuration for skfedida's documentation."""

project = "skfedida"
author = "skfedida developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# Every example runs when the docs are built (all finish within a minute).
# CI builds with -D plot_gallery=0: tests/test_examples.py has run each
# example once already and checked its output.
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py",
    "matplotlib_animations": False,
    "download_all_examples": False,
    # Not a tracked file rewritten by every build.
    "write_computation_times": False,
}
autosummary_generate = True
numpydoc_show_class_members = False
templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb"]
html_theme = "pydata_sphinx_theme"
intersphinx_mapping = {}


def _skip_sklearn_machinery(app, what, name, obj, skip, options):
    """sklearn's metadata-routing and set_output methods are sklearn's to document."""
    if name in ("get_metadata_routing", "set_output") or (
        name.startswith("set_") and name.endswith("_request")
    ):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_machinery)
