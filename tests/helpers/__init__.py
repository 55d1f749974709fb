"""Plain functions and constants the tests share (importable as ``helpers.x``, since
pyproject's ``[tool.pytest.ini_options] pythonpath`` puts ``tests/`` on ``sys.path``);
fixtures are in ``tests/conftest.py``."""
