"""Build of skfedida's compiled inner loop (everything else is in pyproject.toml)."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [Extension("skfedida._models._sgd_fast", ["skfedida/_models/_sgd_fast.pyx"])],
        compiler_directives={"language_level": "3"},
    )
)
