// The exported offline page (ui/views/export.py to_html): draws each figure of FIGS, defined by the script before.
FIGS.forEach((f, i) => Plotly.newPlot('fig' + i, f.data, f.layout, f.config));
