{#- Classify an HTTP status code: 'ok', 'client_error' or 'server_error'. -#}
{% macro status_class(column) -%}
CASE WHEN {{ column }} >= 500 THEN 'server_error' WHEN {{ column }} >= 400 THEN 'client_error' ELSE 'ok' END
{%- endmacro %}
