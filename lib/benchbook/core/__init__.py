"""The bottom of the library, beside `errors`: what every layer may use and nothing of benchbook below it.

`config` declares a configuration's axes once (key, order, words, conversions); `yamlfile` reads YAML
with the line of every key and item, refusing duplicate keys; `values` checks values that reach a
shell or a job script; `problems` is the one cross-field problem type, told at each field's line;
`project` says where the project's files are (the checkout, or the copy an installed wheel carries).
Nothing is imported here: importing `benchbook.core.config` costs neither PyYAML nor pydantic.
"""
