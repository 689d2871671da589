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


def test_a_count_takes_the_letters_people_write():
    """15T token (DeepSeek-V3's 14.8T pre-training tokens, as its report writes them), 70B parameter:
    the letter right after the number scales it; a byte unit written "70B" alone is Pint's."""
    assert parse("15T token").to("token").magnitude == pytest.approx(15e12)
    assert parse("70B parameter").to("parameter").magnitude == pytest.approx(70e9)
    assert parse("2K token/sequence").to("token/sequence").magnitude == pytest.approx(2e3)
    assert parse("1.5M token").to("token").magnitude == pytest.approx(1.5e6)
    assert parse("70B").to("byte").magnitude == pytest.approx(70)
    assert parse("80 GB").to("byte").magnitude == pytest.approx(80e9)


@pytest.mark.parametrize("bad", ["3 furlongs", "", "3 TB/s)", "TB/s", "fast", "15 T token", "15Q token"])
def test_unparseable_values_raise_a_readable_error(bad):
    # 'TB/s' alone would be 1 TB/s to Pint: a value must start with its number
    with pytest.raises(UnitParseError):
        parse(bad)
