"""Trino's date and time functions through the Engine on Spark: values (the formats read as Trino reads them,
milliseconds rounded or truncated as Trino does), NULL arguments, and Trino's coded errors (see functions_kit;
``ts`` is Sunday 2020-05-17 10:37:12.345)."""

from __future__ import annotations

from mergekit.errors import ErrorCode

from .functions_kit import UTC, D, T, chapter_tests, try_test

BAD = ErrorCode.INVALID_FUNCTION_ARGUMENT
REFUSED = ErrorCode.NOT_SUPPORTED
MISMATCH = ErrorCode.TYPE_MISMATCH

VALUES = [
    ("current_date = CAST(current_timestamp AS date)", True),
    ("current_timestamp IS NOT NULL AND now() IS NOT NULL AND localtimestamp IS NOT NULL", True),
    ("date_diff('second', now(), current_timestamp) BETWEEN -5 AND 5", True),
    ("current_timezone()", "UTC"),
    ("millisecond(current_timestamp) = millisecond(localtimestamp) AND second(now()) >= 0", True),
    ("to_unixtime(current_timestamp) * 1000 = floor(to_unixtime(current_timestamp) * 1000)", True),
    ("date('2020-01-02')", D(2020, 1, 2)),
    ("date(ts)", D(2020, 5, 17)),
    ("date(tz)", D(2020, 5, 17)),
    ("last_day_of_month(dt)", D(2020, 5, 31)),
    ("last_day_of_month(DATE '2020-02-10')", D(2020, 2, 29)),
    ("date_add('day', 1, dt)", D(2020, 5, 18)),
    ("date_add('month', 1, DATE '2020-01-31')", D(2020, 2, 29)),
    ("date_add('hour', 25, ts)", T(2020, 5, 18, 11, 37, 12, 345000)),
    ("date_diff('day', DATE '2020-01-01', dt)", 137),
    ("date_diff('hour', ts, TIMESTAMP '2020-05-18 10:37:12.345')", 24),
    ("date_diff('month', DATE '2020-01-31', DATE '2020-02-29')", 0),
    ("date_trunc('month', dt)", D(2020, 5, 1)),
    ("date_trunc('week', dt)", D(2020, 5, 11)),
    ("date_trunc('hour', ts)", T(2020, 5, 17, 10)),
    ("extract(year FROM dt)", 2020),
    ("extract(dow FROM dt)", 7),
    ("year(ts)", 2020),
    ("quarter(dt)", 2),
    ("month(dt)", 5),
    ("week(dt)", 20),
    ("week_of_year(DATE '2021-01-01')", 53),
    ("day(dt)", 17),
    ("day_of_month(ts)", 17),
    ("day_of_week(dt)", 7),
    ("dow(DATE '2020-05-18')", 1),
    ("day_of_year(DATE '2020-02-01')", 32),
    ("doy(dt)", 138),
    ("year_of_week(DATE '2021-01-01')", 2020),
    ("yow(dt)", 2020),
    ("hour(ts)", 10),
    ("minute(ts)", 37),
    ("second(ts)", 12),
    ("millisecond(ts)", 345),
    ("millisecond(ts6)", 345),
    # MySQL formats: Trino's documentation example, every specifier, rounding to milliseconds
    ("date_format(TIMESTAMP '2022-10-20 05:10:00', '%m-%d-%Y %H')", "10-20-2022 05"),
    ("date_format(ts, '%Y-%m-%d %H:%i:%s.%f')", "2020-05-17 10:37:12.345000"),
    (
        "date_format(ts, '%a %b %W %M %p %j %v %x %c %e %k %l %h %I %S %T %r %y')",
        "Sun May Sunday May AM 138 20 2020 5 17 10 10 10 10 12 10:37:12 10:37:12 AM 20",
    ),
    ("date_format(ts6, '%f')", "346000"),
    ("date_format(TIMESTAMP '2020-01-01 00:00:00.9996', '%s.%f')", "01.000000"),
    ("date_format(dt, '%Y %H')", "2020 00"),
    ("date_format(tz, '%H:%i')", "10:37"),
    ("date_format(ts, '')", ""),
    ("date_format(ts, '%%%q 50%')", "%q 50"),
    ("date_format(ts, '''')", "'"),
    # Joda patterns
    ("format_datetime(ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "2020-05-17 10:37:12.345"),
    ("format_datetime(ts, 'EEE, d MMM yyyy h:mm a')", "Sun, 17 May 2020 10:37 AM"),
    ("format_datetime(ts, 'EEEE MMMM G D DDDD')", "Sunday May AD 138 0138"),
    ("format_datetime(dt, 'xxxx-ww-e')", "2020-20-7"),
    ("format_datetime(DATE '2021-01-01', 'xx w')", "20 53"),
    ("format_datetime(tz, 'yyyy Z ZZ z')", "2020 +0000 +00:00 UTC"),
    ("format_datetime(ts, '''at'' HH [k] K hh')", "at 10 [10] 10 10"),
    ("format_datetime(ts, 'HHH SSSSSS')", "010 345000"),
    ("format_datetime(ts6, 'SSS')", "346"),
    ("format_datetime(ts, '''''')", "'"),
    # date_parse: Trino's documentation example, one or two digits, no separators, names, 12-hour clock
    ("date_parse('2022/10/20/05', '%Y/%m/%d/%H')", T(2022, 10, 20, 5)),
    ("date_parse('2022-1-5', '%Y-%m-%d')", T(2022, 1, 5)),
    ("date_parse('20221005', '%Y%m%d')", T(2022, 10, 5)),
    ("date_parse('05:06:07 PM', '%r')", T(1970, 1, 1, 17, 6, 7)),
    ("date_parse('12:00:00 AM', '%r')", T(1970, 1, 1, 0, 0, 0)),
    ("date_parse('2020-05-17 10:37:12.3456', '%Y-%m-%d %H:%i:%s.%f')", T(2020, 5, 17, 10, 37, 12, 345000)),
    ("date_parse('Jan 5 2022', '%b %e %Y')", T(2022, 1, 5)),
    ("date_parse('FEBRUARY 2020', '%M %Y')", T(2020, 2, 1)),
    ("date_parse('2020 060', '%Y %j')", T(2020, 2, 29)),
    ("date_parse('10:37', '%H:%i')", T(1970, 1, 1, 10, 37)),
    # unix time, ISO 8601, intervals, zones
    ("to_unixtime(ts)", 1589711832345 / 1000.0),
    ("to_unixtime(tz)", 1589711832345 / 1000.0),
    ("to_unixtime(ts6)", 1589711832345 / 1000.0 + 678000000 / 1e12),
    ("from_unixtime(1589711832.345)", T(2020, 5, 17, 10, 37, 12, 345000, tzinfo=UTC)),
    ("from_unixtime(1.0006)", T(1970, 1, 1, 0, 0, 1, 1000, tzinfo=UTC)),
    ("from_unixtime(-0.0015)", T(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)),
    ("from_unixtime(nan())", T(1970, 1, 1, tzinfo=UTC)),
    ("from_unixtime(n)", T(1970, 1, 1, 0, 0, 5, tzinfo=UTC)),
    ("to_iso8601(dt)", "2020-05-17"),
    ("to_iso8601(ts)", "2020-05-17T10:37:12.345"),
    ("to_iso8601(tz)", "2020-05-17T10:37:12.345Z"),
    ("to_iso8601(ts6)", "2020-05-17T10:37:12.345678"),
    ("to_iso8601(CAST(ts AS timestamp(0)))", "2020-05-17T10:37:12"),
    ("to_milliseconds(INTERVAL '1' DAY)", 86400000),
    ("to_milliseconds(INTERVAL '2.5' SECOND)", 2500),
    ("with_timezone(ts, 'UTC')", T(2020, 5, 17, 10, 37, 12, 345000, tzinfo=UTC)),
    ("at_timezone(tz, 'UTC')", T(2020, 5, 17, 10, 37, 12, 345000, tzinfo=UTC)),
    # a zone other than UTC: the value's zone, kept per expression (docs/sql.md, "Time zones")
    ("with_timezone(ts, 'Europe/Paris')", T(2020, 5, 17, 8, 37, 12, 345000, tzinfo=UTC)),
    ("CAST(with_timezone(ts, 'Europe/Paris') AS varchar)", "2020-05-17 10:37:12.345 Europe/Paris"),
    ("at_timezone(tz, 'America/New_York')", T(2020, 5, 17, 10, 37, 12, 345000, tzinfo=UTC)),
    ("CAST(at_timezone(tz, 'America/New_York') AS varchar)", "2020-05-17 06:37:12.345 America/New_York"),
    ("hour(at_timezone(tz, '+05:30'))", 16),
    ("CAST(at_timezone(tz, '-03:00') AS timestamp)", T(2020, 5, 17, 7, 37, 12, 345000)),
]

NULLS = [
    "date(s)", "last_day_of_month(dt)", "date_add('day', 1, dt)", "date_add('day', n, DATE '2020-01-01')",
    "date_diff('day', dt, DATE '2020-01-01')", "date_trunc('day', dt)", "extract(year FROM dt)", "year(dt)",
    "quarter(dt)", "month(dt)", "week(dt)", "week_of_year(dt)", "day(dt)", "day_of_month(dt)", "day_of_week(dt)",
    "dow(dt)", "day_of_year(dt)", "doy(dt)", "year_of_week(dt)", "yow(dt)", "hour(ts)", "minute(ts)", "second(ts)",
    "millisecond(ts)", "date_format(ts, '%Y')", "date_format(TIMESTAMP '2020-01-01 00:00:00', NULL)",
    "date_format(ts, 'literal')", "format_datetime(ts, 'yyyy')", "format_datetime(ts, '''x''')",
    "date_parse(s, '%Y')", "date_parse('2020', NULL)", "to_unixtime(ts)", "from_unixtime(d)", "to_iso8601(dt)",
    "to_iso8601(ts)", "to_milliseconds(CAST(NULL AS interval day to second))", "with_timezone(ts, 'UTC')",
    "at_timezone(tz, 'UTC')",
]  # fmt: skip

ERRORS = [
    ("date_add('hour', 1, dt)", BAD, "'hour' is not a valid DATE field"),
    ("date_trunc('second', dt)", BAD, "'second' is not a valid DATE field"),
    ("date_diff('fortnight', ts, ts)", BAD, "'fortnight' is not a valid TIMESTAMP field"),
    ("date_format(ts, '%D')", BAD, "%D not supported in date format string"),
    ("date_format(ts, '%w')", BAD, "%w not supported in date format string"),
    ("date_format(ts, s)", REFUSED, "constant format"),
    ("date_format(s, '%Y')", MISMATCH, "for function date_format"),
    ("format_datetime(ts, 'Z')", BAD, "cannot use 'Z' nor 'z' in format"),
    ("format_datetime(ts, 'q')", BAD, "Illegal pattern component: q"),
    ("format_datetime(ts, 'CC')", REFUSED, "century"),
    ("date_parse('2022-13-01', '%Y-%m-%d')", BAD, "Value 13 for month must be in the range [1,12]"),
    ("date_parse('2022-02-30', '%Y-%m-%d')", BAD, ""),
    ("date_parse('x2022', '%Y')", BAD, 'Invalid format: "x2022"'),
    ("date_parse('2022-01-01 12:00:61', '%Y-%m-%d %H:%i:%s')", BAD, "Value 61 for second"),
    ("date_parse('jAn 2022', '%b %Y')", BAD, "Invalid format"),
    ("date_parse('2021 366', '%Y %j')", BAD, "dayOfYear"),
    ("date_parse('1', '%w')", BAD, "%w not supported in date format string"),
    ("date_parse('Sun', '%a')", REFUSED, "%a"),
    ("date_parse('12', '%h')", REFUSED, "without %p"),
    ("date_parse(s, s)", REFUSED, "constant format"),
    ("from_unixtime(1e20)", BAD, "Millis overflow"),
    ("from_unixtime(d, 'Europe/Paris')", REFUSED, "time zone"),
    ("with_timezone(ts, 'Europe/Pariss')", BAD, "Time zone not supported: Europe/Pariss"),
    ("at_timezone(tz, s)", REFUSED, "not a literal"),
    ("to_iso8601(at_timezone(tz, '+05:30'))", REFUSED, "in zone +05:30"),
    ("to_milliseconds(INTERVAL '1' MONTH)", REFUSED, "to_milliseconds(interval year to month)"),
]

TRIES = [
    ("try(date_parse('2022-02-30', '%Y-%m-%d'))", None),
    ("try(date_parse('x', '%Y'))", None),
    ("try(from_unixtime(1e20))", None),
    ("try(date_format(ts, '%D'))", None),
]

test_values, test_null_arguments, test_errors = chapter_tests(VALUES, NULLS, ERRORS)
test_try_turns_argument_errors_into_null = try_test(TRIES)
