"""Tests of the report (reports/)."""
