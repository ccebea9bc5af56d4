"""Where the "?" of an estimator's HTML repr points: this project's API pages.

scikit-learn's HTML repr (``estimator_html_repr``, a notebook's display)
links each estimator to its documentation page through three class
attributes of ``BaseEstimator``; theirs point at scikit-learn's site, and
only for scikit-learn's own classes. :class:`DocLinkMixin` points them at the
page ``doc/api.rst`` generates for each public class
(``generated/<public module>.<name>.html``), under the documentation address
declared in ``pyproject.toml`` (``[project.urls] Documentation``, repeated in
:data:`DOCUMENTATION_URL`): ``latest/`` for a development version, the
version's own pages for a release.
"""

import importlib
from importlib import metadata

#: The documentation's address, as ``pyproject.toml`` declares it.
DOCUMENTATION_URL = "https://skfedida.readthedocs.io/en/{version}/"

#: The public subpackages whose classes have API pages, in ``doc/api.rst``.
PUBLIC_MODULES = (
    "linear_model",
    "neural_network",
    "ensemble",
    "over_sampling",
    "preprocessing",
    "federated",
    "postprocessing",
    "model_selection",
)


def documentation_url(version):
    """The documentation's address for a version of the package.

    Parameters
    ----------
    version : str
        A version string, e.g. ``"0.1.0"`` or ``"0.1.0.dev0"``.

    Returns
    -------
    url : str
        ``latest/`` pages for a development version, ``v<version>/`` ones
        for a release.
    """
    slug = "latest" if "dev" in version else f"v{version}"
    return DOCUMENTATION_URL.format(version=slug)


def public_module(cls):
    """The public module that exports ``cls`` (its API page's prefix), or None.

    Parameters
    ----------
    cls : type
        A class of this package.

    Returns
    -------
    module : str or None
        E.g. ``"skfedida.linear_model"`` for a class defined in
        ``skfedida._models``; None for a class no public module exports.
    """
    for name in PUBLIC_MODULES:
        module = importlib.import_module(f"skfedida.{name}")
        if getattr(module, cls.__name__, None) is cls:
            return module.__name__
    return None


def _version():
    try:
        return metadata.version("skfedida")
    except metadata.PackageNotFoundError:  # run from a source tree
        return "dev"


class DocLinkMixin:
    """Points an estimator's HTML repr link at its page in this project's docs.

    Put it before ``BaseEstimator`` (or a scikit-learn parent class) in the
    bases. A subclass defined outside the package gets no link, as
    scikit-learn's own mixin does for classes outside scikit-learn.
    """

    _doc_link_module = "skfedida"

    @property
    def _doc_link_template(self):
        return documentation_url(_version()) + "generated/{module}.{name}.html"

    def _doc_link_url_param_generator(self):
        cls = type(self)
        module = public_module(cls)
        if module is None:
            # Not exported by a public module: its page, if any, is that of
            # the class's own module up to its first private part.
            parts = []
            for part in cls.__module__.split("."):
                if part.startswith("_"):
                    break
                parts.append(part)
            module = ".".join(parts)
        return {"module": module, "name": cls.__name__}
