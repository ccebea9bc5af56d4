"""Sphinx configuration for skfedida's documentation."""

project = "skfedida"
author = "skfedida developers"
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "numpydoc",
]
autosummary_generate = True
numpydoc_show_class_members = False
templates_path = ["_templates"]
exclude_patterns = ["_build"]
html_theme = "pydata_sphinx_theme"
intersphinx_mapping = {}


def _skip_sklearn_machinery(app, what, name, obj, skip, options):
    """sklearn's metadata-routing methods are documented by sklearn itself."""
    if name == "get_metadata_routing" or (
        name.startswith("set_") and name.endswith("_request")
    ):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_sklearn_machinery)
