//! Renders the OpenAPI document as one self-contained HTML page: per tag, every operation with
//! its parameters, request body fields and responses; then every schema and the problem
//! codes. Inline CSS, no scripts, no external assets, so it works offline.

use std::fmt::Write;

use serde_json::Value;

use crate::http::codes;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

const STYLE: &str = "body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;\
padding:0 1rem;color:#1d2329}h1{margin-bottom:0}h2{border-bottom:2px solid #d0d7de;margin-top:2.5rem}\
h3{margin:1.8rem 0 .3rem;font-size:1.05rem}code{font:13px ui-monospace,monospace;background:#f3f5f7;\
padding:1px 4px;border-radius:3px}table{border-collapse:collapse;width:100%;margin:.4rem 0}\
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}\
.m{display:inline-block;min-width:4.5rem;font:bold 12px ui-monospace,monospace;color:#fff;\
border-radius:3px;padding:2px 6px;text-align:center;margin-right:.4rem}.get{background:#1f6feb}\
.post{background:#1a7f37}.put,.patch{background:#9a6700}.delete{background:#cf222e}\
nav li{list-style:none}.muted{color:#57606a}";

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes prose and renders its `backtick` spans as code.
pub(crate) fn prose(text: &str) -> String {
    escape(text)
        .split('`')
        .enumerate()
        .map(|(i, part)| {
            if i % 2 == 1 {
                format!("<code>{part}</code>")
            } else {
                part.to_owned()
            }
        })
        .collect()
}

fn text<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A schema's name when it is a reference to a component.
fn ref_name(schema: &Value) -> Option<&str> {
    schema.get("$ref")?.as_str()?.rsplit('/').next()
}

/// A short, linked description of a schema's type: `string`, `integer | null`, `array of Topic`.
fn type_html(schema: &Value) -> String {
    if let Some(name) = ref_name(schema) {
        return format!("<a href=\"#schema-{0}\">{0}</a>", escape(name));
    }
    if let Some(variants) = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(Value::as_array)
    {
        return variants
            .iter()
            .map(type_html)
            .collect::<Vec<_>>()
            .join(" | ");
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("<code>{}</code>", escape(&v.to_string())))
            .collect();
        return format!("one of {}", names.join(", "));
    }
    let kinds: Vec<&str> = match schema.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let rendered: Vec<String> = kinds
        .iter()
        .map(|kind| {
            match (
                *kind,
                schema.get("items"),
                schema.get("additionalProperties"),
            ) {
                ("array", Some(items), _) => format!("array of {}", type_html(items)),
                ("object", _, Some(values)) if values.is_object() => {
                    format!("map of {}", type_html(values))
                }
                (kind, _, _) => escape(kind),
            }
        })
        .collect();
    if rendered.is_empty() {
        "any".to_owned()
    } else {
        rendered.join(" | ")
    }
}

fn fields_table(out: &mut String, schema: &Value) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    out.push_str(
        "<table><tr><th>field</th><th>type</th><th>required</th><th>description</th></tr>",
    );
    for (name, field) in properties {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            type_html(field),
            if required.contains(&name.as_str()) {
                "yes"
            } else {
                "no"
            },
            prose(text(field, "description"))
        );
    }
    out.push_str("</table>");
}

fn parameters(out: &mut String, operation: &Value) {
    let Some(parameters) = operation.get("parameters").and_then(Value::as_array) else {
        return;
    };
    out.push_str("<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>type</th><th>required</th><th>description</th></tr>");
    for parameter in parameters {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(text(parameter, "name")),
            escape(text(parameter, "in")),
            parameter.get("schema").map(type_html).unwrap_or_default(),
            if parameter
                .get("required")
                .and_then(Value::as_bool)
                .unwrap_or(false)
            {
                "yes"
            } else {
                "no"
            },
            prose(text(parameter, "description"))
        );
    }
    out.push_str("</table>");
}

fn request_body(out: &mut String, operation: &Value, schemas: &Value) {
    let Some(body) = operation.get("requestBody") else {
        return;
    };
    out.push_str("<h4>Request body</h4>");
    if !text(body, "description").is_empty() {
        let _ = write!(out, "<p>{}</p>", prose(text(body, "description")));
    }
    for (media, content) in body
        .get("content")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let schema = content.get("schema").unwrap_or(&Value::Null);
        let _ = write!(
            out,
            "<p><code>{}</code>: {}</p>",
            escape(media),
            type_html(schema)
        );
        if let Some(component) = ref_name(schema).and_then(|name| schemas.get(name)) {
            fields_table(out, component);
        }
    }
}

fn responses(out: &mut String, operation: &Value) {
    out.push_str(
        "<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th></tr>",
    );
    for (status, response) in operation
        .get("responses")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let bodies: Vec<String> = response
            .get("content")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(media, content)| {
                let schema = content.get("schema").map(type_html).unwrap_or_default();
                format!("<code>{}</code> {}", escape(media), schema)
            })
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(status),
            prose(text(response, "description")),
            bodies.join("<br>")
        );
    }
    out.push_str("</table>");
}

fn operation_html(out: &mut String, method: &str, path: &str, operation: &Value, schemas: &Value) {
    let _ = write!(
        out,
        "<h3 id=\"{method}-{anchor}\"><span class=\"m {method}\">{upper}</span><code>{path}</code></h3>",
        anchor = escape(&path.replace(['/', '{', '}'], "_")),
        upper = method.to_ascii_uppercase(),
        path = escape(path)
    );
    let _ = write!(
        out,
        "<p><strong>{}</strong></p>",
        prose(text(operation, "summary"))
    );
    for paragraph in text(operation, "description")
        .split("\n\n")
        .filter(|p| !p.is_empty())
    {
        let _ = write!(out, "<p>{}</p>", prose(paragraph));
    }
    parameters(out, operation);
    request_body(out, operation, schemas);
    responses(out, operation);
}

fn operations(document: &Value) -> Vec<(&str, &str, &Value)> {
    let mut found = Vec::new();
    for (path, item) in document
        .get("paths")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                found.push((method, path.as_str(), operation));
            }
        }
    }
    found
}

fn has_tag(operation: &Value, tag: &str) -> bool {
    operation
        .get("tags")
        .and_then(Value::as_array)
        .is_some_and(|tags| tags.iter().any(|t| t.as_str() == Some(tag)))
}

fn schemas_section(out: &mut String, schemas: &Value) {
    out.push_str("<h2 id=\"schemas\">Schemas</h2>");
    for (name, schema) in schemas.as_object().into_iter().flatten() {
        let _ = write!(out, "<h3 id=\"schema-{0}\">{0}</h3>", escape(name));
        if !text(schema, "description").is_empty() {
            let _ = write!(out, "<p>{}</p>", prose(text(schema, "description")));
        }
        if schema.get("properties").is_some() {
            fields_table(out, schema);
        } else {
            let _ = write!(out, "<p>{}</p>", type_html(schema));
        }
    }
}

fn codes_section(out: &mut String) {
    out.push_str("<h2 id=\"codes\">Problem codes</h2><table><tr><th>code</th><th>title</th></tr>");
    for code in codes::ALL {
        let _ = write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            code.code,
            escape(code.title)
        );
    }
    out.push_str("</table>");
}

/// The whole reference page for an OpenAPI document (as JSON).
pub(crate) fn render(document: &Value) -> String {
    let info = document.get("info").unwrap_or(&Value::Null);
    let schemas = document
        .pointer("/components/schemas")
        .unwrap_or(&Value::Null);
    let tags: Vec<(&str, &str)> = document
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|tag| (text(tag, "name"), text(tag, "description")))
        .collect();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} API reference</title>\
<style>{STYLE}</style></head><body><h1>{title} API reference</h1><p class=\"muted\">version {version} · \
<a href=\"/openapi.json\">openapi.json</a></p><p>{description}</p><nav><ul>",
        title = escape(text(info, "title")),
        version = escape(text(info, "version")),
        description = prose(text(info, "description"))
    );
    for (name, _) in &tags {
        let _ = write!(out, "<li><a href=\"#tag-{0}\">{0}</a></li>", escape(name));
    }
    out.push_str("<li><a href=\"#schemas\">schemas</a></li><li><a href=\"#codes\">problem codes</a></li></ul></nav>");
    let all = operations(document);
    for (name, description) in &tags {
        let _ = write!(
            out,
            "<h2 id=\"tag-{0}\">{0}</h2><p>{1}</p>",
            escape(name),
            prose(description)
        );
        for (method, path, operation) in all.iter().filter(|(_, _, op)| has_tag(op, name)) {
            operation_html(&mut out, method, path, operation, schemas);
        }
    }
    schemas_section(&mut out, schemas);
    codes_section(&mut out);
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    #[test]
    fn backtick_spans_become_code() {
        assert_eq!(prose("a `b<c>` d"), "a <code>b&lt;c&gt;</code> d");
    }

    #[test]
    fn nullable_and_array_types_read_naturally() {
        let nullable = serde_json::json!({"type": ["integer", "null"]});
        assert_eq!(type_html(&nullable), "integer | null");
        let list =
            serde_json::json!({"type": "array", "items": {"$ref": "#/components/schemas/Topic"}});
        assert_eq!(
            type_html(&list),
            "array of <a href=\"#schema-Topic\">Topic</a>"
        );
    }
}
