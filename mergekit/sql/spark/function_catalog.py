"""The catalogue of the Trino functions mergekit evaluates on Spark: the one place that declares them.

Every supported function is an entry here (name, Trino's chapter, its signature, a one-line note); the Spark
translation allows a function call only if its name is listed (``check_listed``, called by the rewrite for every
function node), and a test evaluates every entry through the Engine, so a function cannot be supported without
being listed, nor listed without being supported. Trino functions that are not listed are refused by name with
``NOT_SUPPORTED``; names Trino does not have are ``FUNCTION_NOT_FOUND``.

sqlglot models most functions as node classes (``exp.Substring`` for ``substr`` and ``substring``); a call
parsed with mergekit's dialect keeps the name it was written with (``meta["trino_name"]``), so the check is by
name. A node built without one (by the planner, or parsed with sqlglot's own Trino dialect) is checked by class:
its class must be the class of some listed function's example.

``python -m mergekit.sql.spark.function_catalog docs/sql.md`` rewrites the "Functions" section of docs/sql.md
between its marker comments (``tests/sql/test_function_catalog.py`` fails when the page is out of step).
"""

from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp

from mergekit.errors import ErrorCode, MergekitError
from mergekit.sql.parse.dialect import ARGUMENT_COUNT, ARGUMENT_COUNT_WRONG, DIALECT, call_arguments

__all__ = [
    "FUNCTIONS",
    "CHAPTERS",
    "Function",
    "check_listed",
    "check_argument_count",
    "argument_counts",
    "written_count",
    "functions_markdown",
    "supported_names",
]


@dataclass(frozen=True)
class Function:
    """One supported Trino function: ``example`` is a call in mergekit's SQL (the node it parses to is the node
    the translator sees), ``note`` says what is worth knowing on Spark (forms refused, deviations)."""

    name: str
    chapter: str
    signature: str
    example: str
    note: str = ""


# Trino's chapters (docs/src/main/sphinx/functions/*.md), in the order docs/sql.md lists them.
CHAPTERS: dict[str, str] = {
    "conditional": "Conditional expressions",
    "comparison": "Comparison functions",
    "conversion": "Conversion functions",
    "math": "Mathematical functions",
    "bitwise": "Bitwise functions",
    "string": "String functions",
    "regexp": "Regular expression functions",
    "binary": "Binary functions",
    "datetime": "Date and time functions",
    "json": "JSON functions",
    "array": "Array functions",
    "aggregate": "Aggregate functions",
    "window": "Window functions",
}


def _chapter(chapter: str, *entries: tuple[str, ...]) -> tuple[Function, ...]:
    return tuple(Function(e[0], chapter, e[1], e[2], e[3] if len(e) > 3 else "") for e in entries)


FUNCTIONS: tuple[Function, ...] = (
    *_chapter(
        "conditional",
        ("if", "if(condition, true_value[, false_value])", "if(x > 0, 1, 2)", "lazy: the branch not taken is not evaluated"),
        ("coalesce", "coalesce(value1, value2[, ...])", "coalesce(x, 1)", "lazy, like Trino"),
        ("nullif", "nullif(value1, value2)", "nullif(x, 1)"),
        ("try", "try(expression)", "try(x / 0)", "division by zero, overflow, invalid casts and argument errors become NULL"),
    ),
    *_chapter(
        "comparison",
        ("greatest", "greatest(value1, value2, ..., valueN) -> [same as input]", "greatest(x, 1)", "NULL when any argument is NULL, as Trino"),
        ("least", "least(value1, value2, ..., valueN) -> [same as input]", "least(x, 1)", "NULL when any argument is NULL, as Trino"),
    ),
    *_chapter(
        "conversion",
        ("cast", "cast(value AS type) -> type", "cast(x AS varchar)", "Trino's rounding and text forms"),
        ("try_cast", "try_cast(value AS type) -> type", "try_cast(x AS integer)"),
        ("typeof", "typeof(expr) -> varchar", "typeof(x)", "of a literal, a column or a CAST (the type of a computed expression is refused)"),
    ),
    *_chapter(
        "math",
        ("abs", "abs(x) -> [same as input]", "abs(x)"),
        ("cbrt", "cbrt(x) -> double", "cbrt(x)"),
        ("ceil", "ceil(x) -> [same as input]", "ceil(x)"),
        ("ceiling", "ceiling(x) -> [same as input]", "ceiling(x)"),
        ("degrees", "degrees(x) -> double", "degrees(x)"),
        ("e", "e() -> double", "e()"),
        ("exp", "exp(x) -> double", "exp(x)"),
        ("floor", "floor(x) -> [same as input]", "floor(x)"),
        ("ln", "ln(x) -> double", "ln(x)", "ln(0) is -Infinity, ln(-1) NaN"),
        ("log", "log(b, x) -> double", "log(2, x)", "ln(x) / ln(b), as Trino computes it"),
        ("log2", "log2(x) -> double", "log2(x)"),
        ("log10", "log10(x) -> double", "log10(x)"),
        ("mod", "mod(n, m) -> [same as input]", "mod(x, 3)", "sign of the dividend; mod(n, 0) fails for exact types"),
        ("pi", "pi() -> double", "pi()"),
        ("pow", "pow(x, p) -> double", "pow(x, 2)"),
        ("power", "power(x, p) -> double", "power(x, 2)"),
        ("radians", "radians(x) -> double", "radians(x)"),
        ("rand", "rand([m, ]n) -> double / [same as input]", "rand()", "alias of random"),
        ("random", "random([m, ]n) -> double / [same as input]", "random()", "random(n) and random(m, n) of integers too"),
        ("round", "round(x[, d]) -> [same as input]", "round(x, 2)", "half away from zero; round(double, d) computed in binary floating point as Trino does"),
        ("sign", "sign(x) -> [same as input]", "sign(x)"),
        ("sqrt", "sqrt(x) -> double", "sqrt(x)"),
        ("truncate", "truncate(x[, d]) -> [same as input]", "truncate(x)", "truncate(x, d) of decimals only"),
        ("width_bucket", "width_bucket(x, bound1, bound2, n) -> bigint", "width_bucket(x, 0, 10, 5)", "the array form is refused"),
        ("acos", "acos(x) -> double", "acos(x)"),
        ("asin", "asin(x) -> double", "asin(x)"),
        ("atan", "atan(x) -> double", "atan(x)"),
        ("atan2", "atan2(y, x) -> double", "atan2(x, 1)"),
        ("cos", "cos(x) -> double", "cos(x)"),
        ("cosh", "cosh(x) -> double", "cosh(x)"),
        ("sin", "sin(x) -> double", "sin(x)"),
        ("sinh", "sinh(x) -> double", "sinh(x)"),
        ("tan", "tan(x) -> double", "tan(x)"),
        ("tanh", "tanh(x) -> double", "tanh(x)"),
        ("infinity", "infinity() -> double", "infinity()"),
        ("nan", "nan() -> double", "nan()"),
        ("is_finite", "is_finite(x) -> boolean", "is_finite(x)"),
        ("is_infinite", "is_infinite(x) -> boolean", "is_infinite(x)"),
        ("is_nan", "is_nan(x) -> boolean", "is_nan(x)"),
        ("from_base", "from_base(string, radix) -> bigint", "from_base(x, 16)"),
        ("to_base", "to_base(x, radix) -> varchar", "to_base(x, 16)"),
    ),
    *_chapter(
        "bitwise",
        ("bit_count", "bit_count(x, bits) -> bigint", "bit_count(x, 64)"),
        ("bitwise_and", "bitwise_and(x, y) -> bigint", "bitwise_and(x, 3)"),
        ("bitwise_or", "bitwise_or(x, y) -> bigint", "bitwise_or(x, 3)"),
        ("bitwise_xor", "bitwise_xor(x, y) -> bigint", "bitwise_xor(x, 3)"),
        ("bitwise_not", "bitwise_not(x) -> bigint", "bitwise_not(x)"),
        ("bitwise_left_shift", "bitwise_left_shift(value, shift) -> [same as value]", "bitwise_left_shift(x, 1)", "of an integer: a result outside integer range fails with NOT_SUPPORTED"),
        ("bitwise_right_shift", "bitwise_right_shift(value, shift) -> [same as value]", "bitwise_right_shift(x, 1)", "of an integer: a result outside integer range fails with NOT_SUPPORTED"),
        ("bitwise_right_shift_arithmetic", "bitwise_right_shift_arithmetic(value, shift) -> [same as value]", "bitwise_right_shift_arithmetic(x, 1)"),
    ),
    *_chapter(
        "string",
        ("chr", "chr(n) -> varchar", "chr(65)"),
        ("codepoint", "codepoint(string) -> integer", "codepoint('a')", "the argument must be varchar(1), as in Trino"),
        ("concat", "concat(string1, ..., stringN) -> varchar", "concat(x, 'a')", "also of varbinary values; an operand of another type is `CAST(x AS VARCHAR)` (an extension, as `\\|\\|`)"),
        ("concat_ws", "concat_ws(separator, string1, ..., stringN) -> varchar", "concat_ws(',', x, 'a')", "NULL values are skipped; also of an array"),
        ("ends_with", "ends_with(string, substring) -> boolean", "ends_with(x, 'a')"),
        ("hamming_distance", "hamming_distance(string1, string2) -> bigint", "hamming_distance(x, 'abc')"),
        ("length", "length(string) -> bigint", "length(x)", "also of varbinary (bytes)"),
        ("levenshtein_distance", "levenshtein_distance(string1, string2) -> bigint", "levenshtein_distance(x, 'a')"),
        ("lower", "lower(string) -> varchar", "lower(x)", "code point by code point (İ is i, Σ is always σ)"),
        ("lpad", "lpad(string, size, padstring) -> varchar", "lpad(x, 5, '0')"),
        ("ltrim", "ltrim(string) -> varchar", "ltrim(x)", "removes all whitespace, as Trino"),
        ("luhn_check", "luhn_check(string) -> boolean", "luhn_check(x)"),
        ("position", "position(substring IN string) -> bigint", "position('a' IN x)"),
        ("replace", "replace(string, search[, replace]) -> varchar", "replace(x, 'a', 'b')", "an empty search inserts the replacement around every character, as Trino"),
        ("reverse", "reverse(string) -> varchar", "reverse(x)", "of varbinary refused"),
        ("rpad", "rpad(string, size, padstring) -> varchar", "rpad(x, 5, '0')"),
        ("rtrim", "rtrim(string) -> varchar", "rtrim(x)"),
        ("split", "split(string, delimiter[, limit]) -> array(varchar)", "split(x, ',')"),
        ("split_part", "split_part(string, delimiter, index) -> varchar", "split_part(x, ',', 2)"),
        ("starts_with", "starts_with(string, substring) -> boolean", "starts_with(x, 'a')"),
        ("strpos", "strpos(string, substring) -> bigint", "strpos(x, 'a')", "the instance argument is refused"),
        ("substr", "substr(string, start[, length]) -> varchar", "substr(x, 2)", "also of varbinary"),
        ("substring", "substring(string, start[, length]) -> varchar", "substring(x, 2)"),
        ("translate", "translate(source, from, to) -> varchar", "translate(x, 'a', 'b')"),
        ("trim", "trim([[specification] [string] FROM] source) -> varchar", "trim(x)"),
        ("upper", "upper(string) -> varchar", "upper(x)", "code point by code point (ß stays ß); letters Unicode upper-cases to several letters fail with NOT_SUPPORTED"),
        ("to_utf8", "to_utf8(string) -> varbinary", "to_utf8(x)"),
        ("from_utf8", "from_utf8(binary) -> varchar", "from_utf8(x)", "the replacement argument is refused"),
    ),
    *_chapter(
        "regexp",
        ("regexp_count", "regexp_count(string, pattern) -> bigint", "regexp_count(x, 'a')"),
        ("regexp_extract", "regexp_extract(string, pattern[, group]) -> varchar", "regexp_extract(x, 'a')", "a group that may not take part in a match is refused"),
        ("regexp_extract_all", "regexp_extract_all(string, pattern[, group]) -> array(varchar)", "regexp_extract_all(x, 'a')", "a group that may not take part in a match is refused"),
        ("regexp_like", "regexp_like(string, pattern) -> boolean", "regexp_like(x, 'a')"),
        ("regexp_position", "regexp_position(string, pattern) -> integer", "regexp_position(x, 'a')", "the start and occurrence arguments are refused"),
        ("regexp_replace", "regexp_replace(string, pattern[, replacement]) -> varchar", "regexp_replace(x, 'a', 'b')", "the lambda form is refused"),
        ("regexp_split", "regexp_split(string, pattern) -> array(varchar)", "regexp_split(x, ',')"),
    ),
    *_chapter(
        "binary",
        ("crc32", "crc32(binary) -> bigint", "crc32(x)"),
        ("md5", "md5(binary) -> varbinary", "md5(x)"),
        ("sha1", "sha1(binary) -> varbinary", "sha1(x)"),
        ("sha256", "sha256(binary) -> varbinary", "sha256(x)"),
        ("sha512", "sha512(binary) -> varbinary", "sha512(x)"),
        ("to_hex", "to_hex(binary) -> varchar", "to_hex(x)"),
        ("from_hex", "from_hex(string) -> varbinary", "from_hex(x)"),
        ("to_base64", "to_base64(binary) -> varchar", "to_base64(x)"),
        ("from_base64", "from_base64(string) -> varbinary", "from_base64(x)"),
        ("to_base64url", "to_base64url(binary) -> varchar", "to_base64url(x)"),
        ("from_base64url", "from_base64url(string) -> varbinary", "from_base64url(x)"),
        ("to_big_endian_32", "to_big_endian_32(integer) -> varbinary", "to_big_endian_32(x)"),
        ("from_big_endian_32", "from_big_endian_32(binary) -> integer", "from_big_endian_32(x)"),
        ("to_big_endian_64", "to_big_endian_64(bigint) -> varbinary", "to_big_endian_64(x)"),
        ("from_big_endian_64", "from_big_endian_64(binary) -> bigint", "from_big_endian_64(x)"),
    ),
    *_chapter(
        "datetime",
        ("current_date", "current_date -> date", "current_date"),
        ("current_timestamp", "current_timestamp -> timestamp(3) with time zone", "current_timestamp"),
        ("current_timezone", "current_timezone() -> varchar", "current_timezone()", "always UTC"),
        ("localtimestamp", "localtimestamp -> timestamp(3)", "localtimestamp"),
        ("now", "now() -> timestamp(3) with time zone", "now()"),
        ("date", "date(x) -> date", "date(x)", "CAST(x AS date)"),
        ("last_day_of_month", "last_day_of_month(x) -> date", "last_day_of_month(x)"),
        ("date_add", "date_add(unit, value, timestamp) -> [same as input]", "date_add('day', 1, x)"),
        ("date_diff", "date_diff(unit, timestamp1, timestamp2) -> bigint", "date_diff('day', x, y)"),
        ("date_trunc", "date_trunc(unit, x) -> [same as input]", "date_trunc('day', x)"),
        ("extract", "extract(field FROM x) -> bigint", "extract(year FROM x)", "TIMEZONE_HOUR and TIMEZONE_MINUTE are refused"),
        ("year", "year(x) -> bigint", "year(x)"),
        ("quarter", "quarter(x) -> bigint", "quarter(x)"),
        ("month", "month(x) -> bigint", "month(x)"),
        ("week", "week(x) -> bigint", "week(x)", "ISO week"),
        ("week_of_year", "week_of_year(x) -> bigint", "week_of_year(x)"),
        ("day", "day(x) -> bigint", "day(x)"),
        ("day_of_month", "day_of_month(x) -> bigint", "day_of_month(x)"),
        ("day_of_week", "day_of_week(x) -> bigint", "day_of_week(x)", "1 (Monday) to 7 (Sunday)"),
        ("dow", "dow(x) -> bigint", "dow(x)"),
        ("day_of_year", "day_of_year(x) -> bigint", "day_of_year(x)"),
        ("doy", "doy(x) -> bigint", "doy(x)"),
        ("year_of_week", "year_of_week(x) -> bigint", "year_of_week(x)", "year of the ISO week"),
        ("yow", "yow(x) -> bigint", "yow(x)"),
        ("hour", "hour(x) -> bigint", "hour(x)"),
        ("minute", "minute(x) -> bigint", "minute(x)"),
        ("second", "second(x) -> bigint", "second(x)"),
        ("millisecond", "millisecond(x) -> bigint", "millisecond(x)"),
        ("date_format", "date_format(timestamp, format) -> varchar", "date_format(x, '%Y-%m-%d')", "MySQL format; a constant format; %D %U %u %V %w %X fail as in Trino"),
        ("date_parse", "date_parse(string, format) -> timestamp(3)", "date_parse(x, '%Y-%m-%d')", "a constant format of numeric fields, %p, %b and %M; others refused"),
        ("format_datetime", "format_datetime(timestamp, format) -> varchar", "format_datetime(x, 'yyyy-MM-dd')", "Joda format; a constant format; zone, week-year and century fields refused"),
        ("to_unixtime", "to_unixtime(timestamp) -> double", "to_unixtime(x)"),
        ("from_unixtime", "from_unixtime(unixtime) -> timestamp(3) with time zone", "from_unixtime(x)", "the zone and offset arguments are refused"),
        ("to_iso8601", "to_iso8601(x) -> varchar", "to_iso8601(x)", "of date and timestamp"),
        ("to_milliseconds", "to_milliseconds(interval) -> bigint", "to_milliseconds(x)"),
        ("with_timezone", "with_timezone(timestamp, zone) -> timestamp with time zone", "with_timezone(x, 'America/New_York')", "zone a literal; the value keeps its zone per expression (docs/sql.md, Time zones)"),
        ("at_timezone", "at_timezone(timestamp, zone) -> timestamp with time zone", "at_timezone(x, '+02:00')", "zone a literal; the value keeps its zone per expression (docs/sql.md, Time zones)"),
    ),
    *_chapter(
        "json",
        ("json_array_length", "json_array_length(json) -> bigint", "json_array_length(x)", "of varchar; strings with unescaped control characters are accepted"),
        ("json_extract_scalar", "json_extract_scalar(json, json_path) -> varchar", "json_extract_scalar(x, '$.a')", "of varchar, a constant path; malformed JSON, duplicate keys and non-integer numbers fail with NOT_SUPPORTED"),
    ),
    *_chapter(
        "array",
        ("sequence", "sequence(start, stop[, step]) -> array(bigint)", "sequence(1, 5)", "of integers with Trino's limit of 10,000 entries; of dates without it"),
    ),
    *_chapter(
        "aggregate",
        ("count", "count(*) / count(x) -> bigint", "count(x)"),
        ("count_if", "count_if(x) -> bigint", "count_if(x > 0)"),
        ("sum", "sum(x) -> [same as input]", "sum(x)", "decimal sums are decimal(38, s)"),
        ("avg", "avg(x) -> double / decimal", "avg(x)"),
        ("min", "min(x) -> [same as input]", "min(x)", "the two-argument form is refused"),
        ("max", "max(x) -> [same as input]", "max(x)", "the two-argument form is refused"),
        ("min_by", "min_by(x, y) -> [same as x]", "min_by(x, y)"),
        ("max_by", "max_by(x, y) -> [same as x]", "max_by(x, y)"),
        ("any_value", "any_value(x) -> [same as input]", "any_value(x)"),
        ("arbitrary", "arbitrary(x) -> [same as input]", "arbitrary(x)"),
        ("approx_distinct", "approx_distinct(x) -> bigint", "approx_distinct(x)", "Spark's HyperLogLog++: estimates may differ from Trino's"),
        ("bool_and", "bool_and(boolean) -> boolean", "bool_and(x > 0)"),
        ("bool_or", "bool_or(boolean) -> boolean", "bool_or(x > 0)"),
        ("every", "every(boolean) -> boolean", "every(x > 0)"),
        ("stddev", "stddev(x) -> double", "stddev(x)"),
        ("stddev_samp", "stddev_samp(x) -> double", "stddev_samp(x)"),
        ("stddev_pop", "stddev_pop(x) -> double", "stddev_pop(x)"),
        ("variance", "variance(x) -> double", "variance(x)"),
        ("var_samp", "var_samp(x) -> double", "var_samp(x)"),
        ("var_pop", "var_pop(x) -> double", "var_pop(x)"),
        ("grouping", "grouping(col1, ..., colN) -> bigint", "grouping(x)"),
    ),
    *_chapter(
        "window",
        ("row_number", "row_number() -> bigint", "row_number() OVER ()"),
        ("rank", "rank() -> bigint", "rank() OVER (ORDER BY x)"),
        ("dense_rank", "dense_rank() -> bigint", "dense_rank() OVER (ORDER BY x)"),
        ("ntile", "ntile(n) -> bigint", "ntile(2) OVER (ORDER BY x)"),
        ("percent_rank", "percent_rank() -> double", "percent_rank() OVER (ORDER BY x)"),
        ("cume_dist", "cume_dist() -> double", "cume_dist() OVER (ORDER BY x)"),
        ("first_value", "first_value(x) -> [same as input]", "first_value(x) OVER (ORDER BY x)"),
        ("last_value", "last_value(x) -> [same as input]", "last_value(x) OVER (ORDER BY x)"),
        ("nth_value", "nth_value(x, offset) -> [same as input]", "nth_value(x, 2) OVER (ORDER BY x)"),
        ("lag", "lag(x[, offset[, default]]) -> [same as input]", "lag(x) OVER (ORDER BY x)"),
        ("lead", "lead(x[, offset[, default]]) -> [same as input]", "lead(x) OVER (ORDER BY x)"),
    ),
)  # fmt: skip

# Every function name Trino has (docs/src/main/sphinx/functions/list.md): a call of a name outside this list is
# FUNCTION_NOT_FOUND, of a name in it that is not supported NOT_SUPPORTED.
TRINO_NAMES: frozenset[str] = frozenset(
    """abs acos all_match any_match any_value approx_distinct approx_most_frequent approx_percentile approx_set
    arbitrary array_agg array_distinct array_except array_first array_histogram array_intersect array_join array_last
    array_max array_min array_position array_remove array_sort array_union arrays_overlap asin at_timezone atan atan2
    avg bar beta_cdf bing_tile bing_tile_at bing_tile_coordinates bing_tile_polygon bing_tile_quadkey
    bing_tile_zoom_level bing_tiles_around bit_count bitwise_and bitwise_and_agg bitwise_left_shift bitwise_not
    bitwise_or bitwise_or_agg bitwise_right_shift bitwise_right_shift_arithmetic bitwise_xor bool_and bool_or
    cardinality cast cbrt ceil ceiling char2hexint checksum chr classifier classify codepoint coalesce color
    combinations concat concat_ws contains contains_sequence convex_hull_agg corr cos cosh cosine_distance
    cosine_similarity count count_if covar_pop covar_samp crc32 cume_dist current_date current_groups current_time
    current_timestamp current_timezone current_user date date_add date_diff date_format date_parse date_trunc day
    day_of_month day_of_week day_of_year degrees dense_rank dow doy e element_at empty_approx_set ends_with every
    exclude_columns exp extract features filter first first_value flatten floor format format_datetime format_number
    from_base from_base32 from_base64 from_base64url from_big_endian_32 from_big_endian_64 from_encoded_polyline
    from_hex from_ieee754_32 from_ieee754_64 from_iso8601_date from_iso8601_timestamp from_iso8601_timestamp_nanos
    from_unixtime from_unixtime_nanos from_utf8 geometric_mean geometry_from_hadoop_shape geometry_invalid_reason
    geometry_nearest_points geometry_to_bing_tiles geometry_union geometry_union_agg great_circle_distance greatest
    grouping hamming_distance hash_counts histogram hmac_md5 hmac_sha1 hmac_sha256 hmac_sha512 hour
    human_readable_seconds if index infinity intersection_cardinality inverse_beta_cdf inverse_normal_cdf is_finite
    is_infinite is_json_scalar is_nan jaccard_index json_array json_array_contains json_array_get json_array_length
    json_exists json_extract json_extract_scalar json_format json_object json_parse json_query json_size json_value
    kurtosis lag last last_day_of_month last_value lead learn_classifier learn_libsvm_classifier
    learn_libsvm_regressor learn_regressor least length levenshtein_distance line_interpolate_point
    line_interpolate_points line_locate_point listagg ln localtime localtimestamp log log10 log2 lower lpad ltrim
    luhn_check make_set_digest map map_agg map_concat map_entries map_filter map_from_entries map_keys map_union
    map_values map_zip_with match_number max max_by md5 merge merge_set_digest millisecond min min_by minute mod
    month multimap_agg multimap_from_entries murmur3 nan next ngrams none_match normal_cdf normalize now nth_value
    ntile nullif numeric_histogram objectid_timestamp overlay parse_data_size parse_datetime parse_duration
    percent_rank permute pi position pow power prev qdigest_agg quarter radians rand random random_string rank reduce
    reduce_agg regexp_count regexp_extract regexp_extract_all regexp_like regexp_position regexp_replace regexp_split
    regr_intercept regr_slope regress render repeat replace reverse rgb round row row_number rpad rtrim second
    sequence sha1 sha256 sha512 shuffle sign simplify_geometry sin sinh skewness slice soundex split split_part
    split_to_map split_to_multimap spooky_hash_v2_32 spooky_hash_v2_64 sqrt st_area st_asbinary st_astext
    st_boundary st_buffer st_centroid st_contains st_convexhull st_coorddim st_crosses st_difference st_dimension
    st_disjoint st_distance st_endpoint st_envelope st_envelopeaspts st_equals st_exteriorring st_geomfrombinary
    st_geometries st_geometryfromtext st_geometryn st_geometrytype st_interiorringn st_interiorrings st_intersection
    st_intersects st_isclosed st_isempty st_isring st_issimple st_isvalid st_length st_linefromtext st_linestring
    st_multipoint st_numgeometries st_numpoints st_overlaps st_point st_pointn st_points st_polygon st_relate
    st_startpoint st_symdifference st_touches st_union st_within st_x st_xmax st_xmin st_y st_ymax st_ymin
    starts_with stddev stddev_pop stddev_samp strpos substr substring sum t_cdf t_pdf tan tanh tdigest_agg
    theta_sketch_cardinality theta_sketch_union timestamp_objectid timezone timezone_hour timezone_minute title_case
    to_base to_base32 to_base64 to_base64url to_big_endian_32 to_big_endian_64 to_char to_date to_encoded_polyline
    to_geometry to_hex to_ieee754_32 to_ieee754_64 to_iso8601 to_milliseconds to_spherical_geography to_timestamp
    to_unixtime to_utf8 transform transform_keys transform_values translate trim trim_array truncate try try_cast
    typeof upper url_decode url_encode url_extract_fragment url_extract_host url_extract_parameter url_extract_path
    url_extract_port url_extract_protocol url_extract_query uuid value_at_quantile values_at_quantiles var_pop
    var_samp variance version week week_of_year width_bucket wilson_interval_lower wilson_interval_upper
    with_timezone word_stem xxhash64 year year_of_week yow zip zip_with zstd_compress zstd_decompress""".split()
)

# Function nodes that are syntax rather than calls (CASE, ARRAY[...], ROW(...), UNNEST(...)).
_SYNTAX: tuple[type, ...] = (exp.Case, exp.Array, exp.Struct, exp.Tuple, exp.Unnest, exp.Explode, exp.Interval)


def supported_names() -> frozenset[str]:
    return frozenset(f.name for f in FUNCTIONS)


def _example_node(function: Function) -> exp.Expr:
    node: exp.Expr = sqlglot.parse_one(f"SELECT {function.example}", read=DIALECT).expressions[0]
    while isinstance(node, (exp.Alias, exp.Window, exp.Paren, exp.Filter)):
        node = node.this
    return node


# Node classes a listed function also parses to, depending on its arguments (date_trunc of a DATE).
_ALSO: dict[type, str] = {exp.DateTrunc: "date_trunc"}


@functools.cache
def listed_classes() -> frozenset[type]:
    """The node classes of the listed functions (those sqlglot models; an anonymous call is listed by name)."""
    examples = {type(n) for n in map(_example_node, FUNCTIONS) if not isinstance(n, exp.Anonymous)}
    return frozenset(examples | {cls for cls, name in _ALSO.items() if name in supported_names()})


def written_name(node: exp.Expr) -> str | None:
    """The function name as written, when the parse recorded it."""
    name = node.meta.get("trino_name") if node.meta else None
    if name:
        return str(name).lower()
    return str(node.name).lower() if isinstance(node, exp.Anonymous) else None


def check_listed(node: exp.Expr, display_name: str) -> None:
    """Refuse a function call the catalogue does not list: FUNCTION_NOT_FOUND for a name Trino does not have,
    NOT_SUPPORTED for one it has."""
    if isinstance(node, _SYNTAX):
        return
    name = written_name(node)
    if name is not None:
        if name in supported_names():
            return
        if name not in TRINO_NAMES:
            raise MergekitError(ErrorCode.FUNCTION_NOT_FOUND, f"Function '{name}' not registered")
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"function {name}() is not supported on Spark")
    if type(node) not in listed_classes():
        raise MergekitError(ErrorCode.NOT_SUPPORTED, f"function {display_name}() is not supported on Spark")


# Functions Trino also calls with another number of arguments than their signature here shows (forms mergekit refuses
# by name when it translates them: strpos's instance, min's n, width_bucket's array of bins, ...): the number of
# their arguments is not checked against the signature.
_OTHER_FORMS = frozenset(
    {"strpos", "from_utf8", "min", "max", "min_by", "max_by", "approx_distinct", "regexp_position", "from_unixtime",
     "width_bucket"}
)  # fmt: skip


def parameter_counts(signature: str) -> tuple[int, int] | None:
    """The fewest and most arguments a signature takes (``substr(string, start[, length])``: 2 and 3); None for one
    that is not a plain list of parameters (``cast(value AS type)``, ``concat(string1, ..., stringN)``)."""
    m = re.fullmatch(r"(\w+)\((.*)\)", signature.split(" -> ")[0].strip())
    if m is None or re.search(r"\.\.\.|\*|\b(?:IN|FROM|AS)\b|/", m.group(2)):
        return None
    required = optional = depth = 0
    for word in re.findall(r"\[|\]|\w+", m.group(2)):
        if word == "[":
            depth += 1
        elif word == "]":
            depth -= 1
        elif depth:
            optional += 1
        else:
            required += 1
    return required, required + optional


@functools.cache
def argument_counts() -> dict[str, tuple[int, int]]:
    """Function name -> the fewest and most arguments, for the listed functions whose signature says them and
    whose example agrees (the catalogue's check of itself: an example is a call that runs)."""
    out: dict[str, tuple[int, int]] = {}
    for function in FUNCTIONS:
        counts = parameter_counts(function.signature)
        if counts is None or function.name in _OTHER_FORMS:
            continue
        if counts[0] <= written_count(_example_node(function)) <= counts[1]:
            out[function.name] = counts
    return out


def written_count(node: exp.Expr) -> int:
    """How many arguments a call was written with (its node may hold defaults the parse added: ``log2(x)`` is
    ``log(2, x)``)."""
    count = node.meta.get(ARGUMENT_COUNT) if node.meta else None
    return int(count) if count is not None else len(call_arguments(node))


def check_argument_count(node: exp.Expr, types: dict[str, object]) -> None:
    """Trino's error for a call of a listed function with too few or too many arguments, in the name the user wrote:
    ``Unexpected parameters (varchar(3)) for function substr. Expected: substr(string, start[, length])``.
    ``types`` holds the types of the node's arguments by argument name (a list for a list)."""
    parsed = bool(node.meta) and (ARGUMENT_COUNT in node.meta or ARGUMENT_COUNT_WRONG in node.meta)
    name = written_name(node) or (node.sql_name().lower() if parsed and isinstance(node, exp.Func) else None)
    if name is None or name not in supported_names():
        return  # a call the planner built, or one check_listed refuses
    given = call_arguments(node)
    wrong = bool(node.meta.get(ARGUMENT_COUNT_WRONG)) if node.meta else False  # sqlglot's node could not hold them
    counts = argument_counts().get(name)
    if not wrong and (counts is None or counts[0] <= written_count(node) <= counts[1]):
        return
    shown: list[str] = []
    position: dict[str, int] = {}
    for key, _ in given:
        t = types.get(key)
        if isinstance(t, list):
            t = t[position.get(key, 0)] if position.get(key, 0) < len(t) else None
            position[key] = position.get(key, 0) + 1
        known = t is not None and getattr(t, "known", False) and str(t) != "unknown"
        shown.append(str(t) if known else "?")
    signature = next(f.signature for f in FUNCTIONS if f.name == name).split(" -> ")[0].strip()
    raise MergekitError(
        ErrorCode.FUNCTION_NOT_FOUND,
        f"Unexpected parameters ({', '.join(shown)}) for function {name}. Expected: {signature}",
    )


# --------------------------------------------------------------------------------------------------
# docs/sql.md

BEGIN = "<!-- functions:begin (generated by python -m mergekit.sql.spark.function_catalog docs/sql.md) -->"
END = "<!-- functions:end -->"


def functions_markdown() -> str:
    """The generated part of docs/sql.md's "Functions" section: every supported function, by chapter."""
    lines = [BEGIN, "", f"{len(FUNCTIONS)} functions, by Trino's chapters.", ""]
    for key, title in CHAPTERS.items():
        entries = sorted((f for f in FUNCTIONS if f.chapter == key), key=lambda f: f.name)
        if not entries:
            continue
        lines += [f"### {title}", "", "| function | signature | notes |", "|---|---|---|"]
        lines += [f"| `{f.name}` | `{f.signature}` | {f.note} |" for f in entries]
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def rewrite_page(text: str) -> str:
    """``text`` (docs/sql.md) with the generated part replaced."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + functions_markdown() + text[end:]


if __name__ == "__main__":
    page = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/sql.md")
    page.write_text(rewrite_page(page.read_text()))
