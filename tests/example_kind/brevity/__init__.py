"""The ``brevity`` kind's room: does the model stop on its own within a few tokens?
(``kind.py``, ``report.py``)"""
