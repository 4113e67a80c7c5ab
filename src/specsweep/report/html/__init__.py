"""The HTML report: one self-contained file rendered from the view model (report.build.view).

    page     render_html: the page, its table of contents, inline CSS, JS and SVG plots
    header   title, simulated-results banner, provenance
    results  the core table, plots, winners, findings
    advice   anomalies, crossovers, per-domain results, recommendations, next steps, method notes
    kit      escaping, the two Markdown marks, HtmlPage (one page being rendered)

Display decisions are the view model's; these modules only render it.
"""
