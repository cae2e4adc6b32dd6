"""What the app shows, without Gradio: a run's data read back (treedata), the tree and other Plotly figures as
JSON-ready dicts (treefig, treeglyphs, figure1, charts, frontier), the decisions and cases read from a run, texts,
tables and export bundles. Importable from a notebook or a script: nothing here imports gradio (the import map's
layer rule, tests/test_import_map.py), nor the ui's jobs or tabs."""
