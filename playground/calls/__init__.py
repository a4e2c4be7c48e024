"""The chat request a saved version makes, and its export as code, side by side:
`builder.py` is the one definition of that request (the run-by-reference routes
and evaluation runs send it), `export/` writes it as code (so exported code and a
run by reference send the same request)."""
