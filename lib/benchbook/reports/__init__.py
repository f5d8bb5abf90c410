"""Reporting: runs and published numbers become the verdict, tables and figures of a report.

`metrics` and `tables` give statistics over repeats and the published layout, `references` the published numbers
and their comparison, `report` the analysis as data, `sections` a page's sections (a notebook shows one per
cell), `headline`/`display` what a reader sees, `plots` the figures, `compare` one study against another,
`publish` executes notebooks into HTML.
"""
