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
templates_path = []
exclude_patterns = ["_build"]
html_theme = "pydata_sphinx_theme"
intersphinx_mapping = {}
