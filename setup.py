"""The optional compiled Kineto scanner (hpuprof/trace/_kineto_scan.c); the rest of the build
is in pyproject.toml. Without a compiler the install still succeeds and the loader uses its
pure-Python (msgspec) path."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hpuprof.trace._kineto_scan",
            ["hpuprof/trace/_kineto_scan.c"],
            extra_compile_args=["-O2", "-Wall"],
            optional=True,
        )
    ]
)
