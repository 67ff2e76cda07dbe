"""SDMX-ML structure parsing and codelist resolution against the real IMF files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_queryeval.errors import SourceUnavailable
from pytest_queryeval.metrics.sdmx import check_terms, parse_turn_selection, score_turn
from pytest_queryeval.sources.sdmx_structure import (
    SdmxStructure,
    cache_key,
    load_structure,
    parse_dataset_id,
    structure_files,
    structure_from_spec,
)


@pytest.fixture(scope="module")
def imf_dir(shared_data: Path) -> Path:
    return shared_data / "sdmx" / "imf"


@pytest.fixture(scope="module")
def imf(imf_dir: Path) -> SdmxStructure:
    return structure_from_spec({"type": "sdmx-structure", "paths": [str(imf_dir)]})


def test_directory_lists_all_xml(imf_dir: Path):
    files = structure_files({"paths": [str(imf_dir)]})
    assert len(files) == 10
    assert all(f.suffix == ".xml" for f in files)


def test_codelists_parsed(imf: SdmxStructure):
    sizes = {cid: len(cls[0].codes) for cid, cls in imf.codelists.items()}
    assert sizes == {"CL_COUNTRY": 337, "CL_COICOP_1999": 15, "CL_INDEX_TYPE": 49,
                     "CL_FREQ": 6, "CL_UNIT": 267, "CL_TRANSFORMATION": 483,
                     "CL_CPI_TYPE_OF_TRANSFORMATION": 7}


def test_country_codes(imf: SdmxStructure):
    codes = imf.codes("IMF.STA:CPI", "COUNTRY")
    assert codes is not None
    assert codes["MEX"] == "Mexico"
    assert codes["ECU"] == "Ecuador"
    assert codes["ARM"] == "Armenia, Republic of"
    assert codes["G001"] == "World"
    assert "XYZ" not in codes


def test_cpi_dimensions_resolve(imf: SdmxStructure):
    # DSD_CPI has no local enumerations: concept scheme, concept id and CL_<DIM> conventions
    assert {d: imf.describe("IMF.STA:CPI", d) for d in
            ("COUNTRY", "INDEX_TYPE", "COICOP_1999", "TYPE_OF_TRANSFORMATION", "FREQUENCY",
             "INDICATOR")} == {
        "COUNTRY": "IMF:CL_COUNTRY(1.5.1)",
        "INDEX_TYPE": "IMF:CL_INDEX_TYPE(2.6.0)",
        "COICOP_1999": "IMF:CL_COICOP_1999(1.0.1)",
        "TYPE_OF_TRANSFORMATION": "IMF.STA:CL_CPI_TYPE_OF_TRANSFORMATION(4.0.0)",  # CS_CPI
        "FREQUENCY": "IMF:CL_FREQ(1.0.3)",  # concept FREQ
        "INDICATOR": "not in the data structure",
    }


def test_dataset_without_dataflow_uses_convention(imf: SdmxStructure):
    assert imf.describe("IMF.RES:WEO", "COUNTRY") == "IMF:CL_COUNTRY(1.5.1)"
    assert imf.describe("IMF.RES:WEO", "INDICATOR") == "no codelist"
    assert imf.codes("IMF.RES:WEO", "INDICATOR") is None


def test_index_type_codes(imf: SdmxStructure):
    codes = imf.codes("IMF.STA:CPI", "INDEX_TYPE")
    assert codes is not None
    assert codes["CPI"] == "Consumer price index (CPI)"
    assert codes["CCPI"] == "Core consumer price index (CPI)"
    assert "CPI_TOTAL" not in codes


@pytest.mark.parametrize("dataset", ["IMF.STA:CPI", "CPI", "IMF.STA:CPI(4.0.0)",
                                     "IMF.STA,CPI,4.0.0"])
def test_dataset_id_forms(imf: SdmxStructure, dataset: str):
    assert imf.dataflow(dataset) is not None


def test_dataset_id_wrong_agency_or_version(imf: SdmxStructure):
    assert imf.dataflow("IMF.RES:CPI") is None
    assert imf.dataflow("IMF.STA:CPI(3.0.0)") is None
    assert parse_dataset_id("IMF.RES:WEO") == ("IMF.RES", "WEO", None)


def test_cpi_case_codelist_validation(imf: SdmxStructure):
    """The statgpt CPI/Ecuador example, plus a hallucinated code and a hallucinated dimension."""
    got = parse_turn_selection({"IMF.STA:CPI": {
        "INDEX_TYPE": {"CPI": "Consumer price index (CPI)", "CPI_ALL": "CPI, all items"},
        "COICOP_1999": {"CP01": "Food and non-alcoholic beverages"},
        "COUNTRY": {"ECU": "Ecuador", "MEX": "México"},
        "INDICATOR": {"PCPI_IX": "CPI index"},
    }})
    turn = score_turn({}, got)
    check_terms(turn, got, imf)
    assert turn.checked_terms == 6
    assert {(i["dimension"], i["id"], i["reason"]) for i in turn.invalid_terms} == {
        ("INDEX_TYPE", "CPI_ALL", "code not in codelist"),
        ("INDICATOR", "PCPI_IX", "dimension not in the data structure"),
    }
    assert [(m["id"], m["codelist_name"]) for m in turn.name_mismatches] == [("MEX", "Mexico")]
    assert turn.metrics()["valid_term_rate"] == pytest.approx(4 / 6)


def test_missing_path_is_source_unavailable(tmp_path: Path):
    with pytest.raises(SourceUnavailable, match="no such file"):
        structure_files({"paths": [str(tmp_path / "nope.xml")]})
    with pytest.raises(SourceUnavailable, match="paths"):
        structure_files({"type": "sdmx-structure"})


def test_unparsable_file_is_source_unavailable(tmp_path: Path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<not-sdmx/>")
    with pytest.raises(SourceUnavailable, match="cannot parse"):
        load_structure([bad])


def test_wrong_type_refused(imf_dir: Path):
    with pytest.raises(SourceUnavailable, match="sdmx-structure"):
        structure_from_spec({"type": "sqlite", "paths": [str(imf_dir)]})


def test_single_file_and_path_key(imf_dir: Path):
    s = structure_from_spec({"type": "sdmx-structure",
                             "path": str(imf_dir / "codelist_IMF-CL_COUNTRY_1.5.1.xml")})
    assert list(s.codelists) == ["CL_COUNTRY"]
    assert s.codes("ANY:THING", "COUNTRY") is not None
    assert cache_key({"path": "a"}) != cache_key({"paths": ["a"]})


def test_library_import_is_lazy():
    code = ("import sys; import pytest_queryeval.kinds.sdmx, pytest_queryeval.metrics.sdmx, "
            "pytest_queryeval.sources.sdmx_structure; "
            "print('sdmx' in sys.modules, 'pysdmx' in sys.modules, 'pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]
