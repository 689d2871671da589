"""The unit registry: counts are real dimensions, decimal and binary prefixes never confused."""
import pytest

from units import DimensionalityError, Quantity, UnitParseError, parse


def test_flop_per_byte_is_not_dimensionless():
    q = parse("1 FLOP") / parse("1 byte")
    assert not q.dimensionless
    assert q.dimensionality == {"[compute]": 1, "[information]": -1}


@pytest.mark.parametrize("unit", ["byte", "FLOP", "parameter", "token", "sequence", "USD", "chip"])
def test_counts_are_base_dimensions(unit):
    assert not Quantity(1, unit).dimensionless


def test_seconds_plus_bytes_raises():
    with pytest.raises(DimensionalityError):
        parse("1 s") + parse("1 byte")


def test_decimal_and_binary_prefixes_differ():
    assert parse("1 GiB").to("byte").magnitude == 2**30
    assert parse("1 GB").to("byte").magnitude == 10**9
    assert parse("80 GiB").to("GB").magnitude == pytest.approx(85.899345920)


def test_gigabit_is_an_eighth_of_a_gigabyte():
    # a 400 Gb/s network card moves 50 GB/s per direction
    assert parse("400 Gb/s").to("GB/s").magnitude == pytest.approx(50)


def test_spec_sheet_strings_parse():
    assert parse("989 TFLOP/s").to("FLOP/s").magnitude == pytest.approx(9.89e14)
    assert parse("3.35 TB/s").to("byte/s").magnitude == pytest.approx(3.35e12)
    assert parse("2.99 USD/hour").to("USD/s").magnitude == pytest.approx(2.99 / 3600)


@pytest.mark.parametrize("bad", ["3 furlongs", "", "3 TB/s)", "TB/s", "fast"])
def test_unparseable_values_raise_a_readable_error(bad):
    # 'TB/s' alone would be 1 TB/s to Pint: a value must start with its number
    with pytest.raises(UnitParseError):
        parse(bad)
