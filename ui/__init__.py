"""UATS Studio, the Gradio app. Here at the top, its shell (launch, app_ui, auth, access, choices, glossary); its
parts by what they depend on: views/ (figures, tables and texts, no Gradio), jobs/ (the worker pool and its
jobs), tabs/ (the page's tabs). docs/architecture.md maps them."""
