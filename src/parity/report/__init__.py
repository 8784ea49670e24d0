"""Renderers of the verdict: terminal (and, later, Markdown, HTML, JSON)."""
