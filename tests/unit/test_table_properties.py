"""Table properties (issue 14, "nothing silently ignored"), without Spark: what a connector declares
(``mergekit.spi.PropertyMetadata``) and the engine's one check of ``WITH (...)`` against it
(``mergekit.planner.properties.validate_table_properties``). End to end, per connector: the conformance kit."""

from __future__ import annotations

import pytest

from mergekit.errors import ErrorCode, MergekitError
from mergekit.planner.properties import validate_table_properties
from mergekit.spi import PROPERTY_TYPES, Connector, PropertyMetadata

DECLARED = (
    PropertyMetadata(name="partitioned_by", description="Partition columns", type="array(varchar)", default=[]),
    PropertyMetadata(name="bucket_count", description="Number of buckets", type="integer"),
    PropertyMetadata(name="compress", description="Compress data files", type="boolean", default=True),
    PropertyMetadata(name="ratio", description="Fill ratio", type="double"),
    PropertyMetadata(name="format", description="File format", type="varchar", allowed_values=("PARQUET", "ORC")),
    PropertyMetadata(name="comment", description="A note", type="varchar"),
    PropertyMetadata(name="rows", description="Rows per file", type="bigint"),
)


def _error(given: dict[str, object], declared: tuple[PropertyMetadata, ...] = DECLARED) -> str:
    with pytest.raises(MergekitError) as info:
        validate_table_properties("lake", declared, given)
    assert info.value.code is ErrorCode.INVALID_TABLE_PROPERTY
    return str(info.value)


def test_unknown_property_is_refused_naming_it_and_listing_the_valid_ones() -> None:
    assert _error({"bogus_prop": 42}) == (
        "[INVALID_TABLE_PROPERTY] Catalog 'lake' table property 'bogus_prop' does not exist. "
        "Valid properties: bucket_count, comment, compress, format, partitioned_by, ratio, rows"
    )


def test_unknown_property_of_a_catalog_without_properties() -> None:
    assert _error({"bogus_prop": 42}, ()) == (
        "[INVALID_TABLE_PROPERTY] Catalog 'lake' table property 'bogus_prop' does not exist. "
        "Catalog 'lake' has no table properties"
    )


def test_the_first_bad_property_in_statement_order_is_named() -> None:
    assert "table property 'zzz' does not exist" in _error({"comment": "x", "zzz": 1, "aaa": 2})


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("partitioned_by", 42, "Cannot convert [42] to array(varchar)"),
        ("partitioned_by", "region", "Cannot convert ['region'] to array(varchar)"),
        ("partitioned_by", [1, 2], "Cannot convert [ARRAY[1, 2]] to array(varchar)"),
        ("bucket_count", "8", "Cannot convert ['8'] to integer"),
        ("bucket_count", 2.5, "Cannot convert [2.5] to integer"),
        ("bucket_count", True, "Cannot convert [true] to integer"),
        ("bucket_count", 2**31, "Value 2147483648 is out of range for integer"),
        ("rows", 2**63, "Value 9223372036854775808 is out of range for bigint"),
        ("compress", 1, "Cannot convert [1] to boolean"),
        ("compress", "true", "Cannot convert ['true'] to boolean"),
        ("ratio", "0.5", "Cannot convert ['0.5'] to double"),
        ("comment", 42, "Cannot convert [42] to varchar"),
        ("comment", ["a"], "Cannot convert [ARRAY['a']] to varchar"),
        ("format", "avro", "Invalid value [avro]. Valid values: PARQUET, ORC"),
    ],
)
def test_wrong_value_is_refused_naming_the_property(name: str, value: object, why: str) -> None:
    assert _error({name: value}) == (
        f"[INVALID_TABLE_PROPERTY] Invalid value for catalog 'lake' table property '{name}': {why}"
    )


def test_null_is_refused_naming_the_property() -> None:
    assert _error({"comment": None}) == (
        "[INVALID_TABLE_PROPERTY] Invalid null value for catalog 'lake' table property 'comment'"
    )


def test_values_are_converted_and_defaults_filled_in() -> None:
    out = validate_table_properties(
        "lake", DECLARED, {"bucket_count": 8, "ratio": 1, "format": "parquet", "rows": 2**40, "comment": "it's"}
    )
    assert out == {
        "bucket_count": 8,
        "ratio": 1.0,
        "format": "PARQUET",  # spelled as declared
        "rows": 2**40,
        "comment": "it's",
        "partitioned_by": [],  # defaults of what the statement did not set; None defaults stay absent
        "compress": True,
    }
    assert isinstance(out["ratio"], float)
    assert validate_table_properties("lake", DECLARED, {"partitioned_by": ["a", "b"], "compress": False}) == {
        "partitioned_by": ["a", "b"],
        "compress": False,
    }


def test_no_properties_given_and_none_declared() -> None:
    assert validate_table_properties("lake", (), {}) == {}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad-Name", "type": "varchar"}, "lower-case identifier"),
        ({"name": "x", "type": "map(varchar, varchar)"}, "property type must be one of"),
        ({"name": "x", "type": "integer", "default": "8"}, "Cannot convert ['8'] to integer"),
        ({"name": "x", "type": "integer", "allowed_values": ("1",)}, "allowed_values needs type varchar"),
    ],
)
def test_a_bad_declaration_fails_when_the_connector_builds_it(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        PropertyMetadata(description="d", **kwargs)  # type: ignore[arg-type]


def test_every_property_type_has_a_conversion() -> None:
    samples = {
        "varchar": "a",
        "boolean": False,
        "integer": 1,
        "bigint": 1,
        "double": 1.5,
        "array(varchar)": ["a"],
    }
    assert set(samples) == set(PROPERTY_TYPES)
    for kind, value in samples.items():
        assert PropertyMetadata(name="p", description="d", type=kind).decode(value) == value


def test_a_connector_declares_no_properties_by_default() -> None:
    assert list(_Bare().get_table_properties()) == []


class _Bare(Connector):
    def get_metadata(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def get_split_manager(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def get_page_source_provider(self):  # type: ignore[no-untyped-def]
        raise NotImplementedError


def test_a_declaration_is_a_hashable_picklable_value() -> None:
    import pickle

    prop = DECLARED[0]  # an array property with a list default
    assert pickle.loads(pickle.dumps(prop)) == prop
    assert len({prop, DECLARED[0]}) == 1
