//! Stateless helpers: `compute_statistics`, `convert_units`.

use serde_json::{Map, Value, json};

use super::{annotations, fail};
use crate::kit::{Args, Tool, result};

const METRICS: [&str; 11] = ["count", "sum", "mean", "median", "min", "max", "stdev", "variance", "p90", "p95", "p99"];
const MAX_VALUES: usize = 10_000;

const COMPUTE_STATISTICS: &str = "\
Compute descriptive statistics over a list of numbers: count, sum, mean, median, min, max, standard deviation, \
variance and the 90th, 95th and 99th percentiles.

Use this whenever an answer depends on arithmetic over more than a handful of numbers (cycle times, story points \
per sprint, response times, costs): doing the arithmetic yourself is error-prone, this is exact and cheap. It \
takes numbers you already have; it does not fetch data. To get numbers from the tracker, use search_issues or \
summarize_project first and pass the values here.

Parameters:
- `values` (required): 1 to 10,000 finite numbers. Order does not matter.
- `metrics`: which statistics to return; all of them when omitted.
- `sample`: true (default) treats the values as a sample and divides by n-1 for variance and standard deviation; \
false treats them as the whole population and divides by n. With a single value, the sample variance is \
undefined and is returned as null.
- `round_to`: decimal places for the results, 0-10 (default 4). Counts are never rounded.

Percentiles use linear interpolation between closest ranks (the same method as spreadsheet PERCENTILE.INC and \
numpy's default), so p50 equals the median.

Returns `count` and a `metrics` object keyed by metric name. Errors: an empty list, more than 10,000 values, \
anything that is not a finite number, or an unknown metric name.";

pub fn compute_statistics() -> Tool {
    let definition = json!({
        "name": "compute_statistics",
        "title": "Compute statistics",
        "description": COMPUTE_STATISTICS,
        "inputSchema": {
            "type": "object",
            "properties": {
                "values": {
                    "type": "array",
                    "items": {"type": "number"},
                    "minItems": 1,
                    "maxItems": MAX_VALUES,
                    "description": "The numbers to summarize.",
                },
                "metrics": {
                    "type": "array",
                    "items": {"type": "string", "enum": METRICS},
                    "uniqueItems": true,
                    "description": "Statistics to compute; all when omitted.",
                },
                "sample": {"type": "boolean", "default": true, "description": "Sample (n-1) rather than population (n) variance."},
                "round_to": {"type": "integer", "minimum": 0, "maximum": 10, "default": 4},
            },
            "required": ["values"],
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "metrics": {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
            },
            "required": ["count", "metrics"],
        },
        "annotations": annotations("Compute statistics", true, false, true),
    });
    Tool::sync(definition, |args| {
        let a = Args::new(&args);
        a.allow_only(&["values", "metrics", "sample", "round_to"])?;
        let mut values = a.number_list("values")?.ok_or_else(|| fail("Missing required argument 'values'.".into()))?;
        if values.is_empty() || values.len() > MAX_VALUES {
            return Err(fail(format!("'values' must hold 1 to {MAX_VALUES} numbers (got {}).", values.len())));
        }
        let metrics = a.str_list("metrics")?.unwrap_or_else(|| METRICS.to_vec());
        if let Some(bad) = metrics.iter().find(|m| !METRICS.contains(m)) {
            return Err(fail(format!("Unknown metric '{bad}'. Valid metrics: {}.", METRICS.join(", "))));
        }
        let sample = a.bool("sample")?.unwrap_or(true);
        let digits = a.int_in("round_to", 0, 10)?.unwrap_or(4) as i32;
        values.sort_by(f64::total_cmp);
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        let mean = sum / n;
        let squares: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        let variance = if sample { (values.len() > 1).then(|| squares / (n - 1.0)) } else { Some(squares / n) };
        let round = |x: f64| {
            let f = 10f64.powi(digits);
            json!((x * f).round() / f)
        };
        let mut out = Map::new();
        for m in metrics {
            let v = match m {
                "count" => json!(values.len()),
                "sum" => round(sum),
                "mean" => round(mean),
                "median" => round(percentile(&values, 50.0)),
                "min" => round(values[0]),
                "max" => round(values[values.len() - 1]),
                "variance" => variance.map_or(Value::Null, round),
                "stdev" => variance.map_or(Value::Null, |v| round(v.sqrt())),
                "p90" => round(percentile(&values, 90.0)),
                "p95" => round(percentile(&values, 95.0)),
                _ => round(percentile(&values, 99.0)),
            };
            out.insert(m.to_owned(), v);
        }
        Ok(result::structured(json!({"count": values.len(), "metrics": out})))
    })
}

/// Linear interpolation between closest ranks over sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// (unit, category, factor to the category's base unit)
const UNITS: [(&str, &str, f64); 29] = [
    ("mm", "length", 0.001),
    ("cm", "length", 0.01),
    ("m", "length", 1.0),
    ("km", "length", 1000.0),
    ("in", "length", 0.0254),
    ("ft", "length", 0.3048),
    ("yd", "length", 0.9144),
    ("mi", "length", 1609.344),
    ("mg", "mass", 0.001),
    ("g", "mass", 1.0),
    ("kg", "mass", 1000.0),
    ("t", "mass", 1_000_000.0),
    ("oz", "mass", 28.349_523_125),
    ("lb", "mass", 453.592_37),
    ("B", "data", 1.0),
    ("KB", "data", 1e3),
    ("MB", "data", 1e6),
    ("GB", "data", 1e9),
    ("TB", "data", 1e12),
    ("KiB", "data", 1024.0),
    ("MiB", "data", 1_048_576.0),
    ("GiB", "data", 1_073_741_824.0),
    ("TiB", "data", 1_099_511_627_776.0),
    ("ms", "duration", 0.001),
    ("s", "duration", 1.0),
    ("min", "duration", 60.0),
    ("h", "duration", 3600.0),
    ("d", "duration", 86_400.0),
    ("wk", "duration", 604_800.0),
];

const TEMPERATURES: [&str; 3] = ["C", "F", "K"];

const CONVERT_UNITS: &str = "\
Convert a value between units of length, mass, digital storage, duration or temperature.

Use this for any unit conversion in an answer (\"how many GiB is 3.5 GB\", \"what is 72 °F in Celsius\", \"how many \
working weeks is 310 hours\"): it is exact and avoids the usual slips, such as confusing decimal gigabytes (GB, \
10^9 bytes) with binary gibibytes (GiB, 2^30 bytes). Do not use it for currencies, which change daily; this \
server has no exchange rates.

Units, case-sensitive:
- length: mm, cm, m, km, in, ft, yd, mi
- mass: mg, g, kg, t (metric tonne), oz, lb (avoirdupois)
- data: B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB (powers of 1024)
- duration: ms, s, min, h, d, wk (calendar time; a \"working day\" is not a unit here)
- temperature: C, F, K (converted with offsets, not just factors; values below absolute zero are refused)

Both units must belong to the same category. The answer has `result` at full precision and `display`, a string \
rounded to `precision` significant digits (default 6, range 1-15) with the unit appended.

Errors: an unknown unit (the message lists the units of the closest category), units from different categories, \
or a non-finite value.";

pub fn convert_units() -> Tool {
    let mut units: Vec<&str> = UNITS.iter().map(|u| u.0).collect();
    units.extend(TEMPERATURES);
    let definition = json!({
        "name": "convert_units",
        "title": "Convert units",
        "description": CONVERT_UNITS,
        "inputSchema": {
            "type": "object",
            "properties": {
                "value": {"type": "number", "description": "The quantity to convert."},
                "from_unit": {"type": "string", "enum": units, "description": "Unit of `value`."},
                "to_unit": {"type": "string", "enum": units, "description": "Unit to convert to."},
                "precision": {"type": "integer", "minimum": 1, "maximum": 15, "default": 6, "description": "Significant digits in `display`."},
            },
            "required": ["value", "from_unit", "to_unit"],
            "additionalProperties": false,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "value": {"type": "number"},
                "from_unit": {"type": "string"},
                "to_unit": {"type": "string"},
                "category": {"type": "string", "enum": ["length", "mass", "data", "duration", "temperature"]},
                "result": {"type": "number"},
                "display": {"type": "string"},
            },
            "required": ["value", "from_unit", "to_unit", "category", "result", "display"],
        },
        "annotations": annotations("Convert units", true, false, true),
    });
    Tool::sync(definition, |args| {
        let a = Args::new(&args);
        a.allow_only(&["value", "from_unit", "to_unit", "precision"])?;
        let value = a.required_number("value")?;
        let from = a.required_str("from_unit")?;
        let to = a.required_str("to_unit")?;
        let precision = a.int_in("precision", 1, 15)?.unwrap_or(6) as usize;
        let from_cat = category(from).map_err(fail)?;
        let to_cat = category(to).map_err(fail)?;
        if from_cat != to_cat {
            return Err(fail(format!(
                "Cannot convert {from} ({from_cat}) to {to} ({to_cat}): pick units of the same category."
            )));
        }
        let converted = if from_cat == "temperature" {
            let kelvin = match from {
                "C" => value + 273.15,
                "F" => (value - 32.0) * 5.0 / 9.0 + 273.15,
                _ => value,
            };
            if kelvin < 0.0 {
                return Err(fail(format!("{value} {from} is below absolute zero.")));
            }
            match to {
                "C" => kelvin - 273.15,
                "F" => (kelvin - 273.15) * 9.0 / 5.0 + 32.0,
                _ => kelvin,
            }
        } else {
            value * factor(from) / factor(to)
        };
        let display = format!("{} {to}", significant(converted, precision));
        Ok(result::structured(json!({
            "value": value,
            "from_unit": from,
            "to_unit": to,
            "category": from_cat,
            "result": converted,
            "display": display,
        })))
    })
}

fn category(unit: &str) -> Result<&'static str, String> {
    if TEMPERATURES.contains(&unit) {
        return Ok("temperature");
    }
    if let Some((_, c, _)) = UNITS.iter().find(|u| u.0 == unit) {
        return Ok(c);
    }
    // Suggest the category whose units look most like the input (case-insensitive match first).
    let guess = UNITS.iter().find(|u| u.0.eq_ignore_ascii_case(unit)).map_or("length", |u| u.1);
    let same: Vec<&str> = UNITS.iter().filter(|u| u.1 == guess).map(|u| u.0).collect();
    Err(format!("Unknown unit '{unit}'. Units are case-sensitive; {guess} units are: {}.", same.join(", ")))
}

fn factor(unit: &str) -> f64 {
    UNITS.iter().find(|u| u.0 == unit).map_or(1.0, |u| u.2)
}

/// `x` rounded to `digits` significant digits, without trailing zeros.
fn significant(x: f64, digits: usize) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let magnitude = x.abs().log10().floor() as i64;
    let decimals = (digits as i64 - 1 - magnitude).clamp(0, 15) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}
