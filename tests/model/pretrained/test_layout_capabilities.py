"""A pretrained family's capabilities are resolved per network: the one encoder-decoder registry entry holds layouts
with a hooked pass (T5, Marian, BART, mBART, M2M100, Pegasus) and could hold layouts without one (here an mBART and an
M2M100 whose adapter is taken out of the registry entry's table), and a network is declared able to do only what its
layout's code serves. The window's and the command line's answer for the others is one line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.family import INTERVENTION_TOOLS, InterventionTool, Objective, QueriesKeys, capabilities_of, families, family_of
from model.interventions.hooked import InterventionError, adapter_of
from model.interventions.served_pass import served_tools
from model.pretrained.loading import load_pretrained
from model.pretrained.tiny import build

UNHOOKED = ("mbart", "m2m100")  # layouts whose adapter each test takes out of the table (``unhooked_folders``)
HOOKED = ("t5", "marian", "bart")


@pytest.fixture(scope="module")
def built_folders(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("unhooked")
    return {layout: str(build(layout, root / layout)) for layout in UNHOOKED}


@pytest.fixture
def unhooked_folders(built_folders, monkeypatch) -> dict[str, str]:
    """Folders of layouts with no adapter declared (their entries taken out of HOOKED_LAYOUTS for the test)."""
    from model.pretrained import families as pretrained

    for layout in UNHOOKED:
        monkeypatch.delitem(pretrained.HOOKED_LAYOUTS, {"m2m100": "m2m_100"}.get(layout, layout))
    return built_folders


@pytest.mark.parametrize("layout", UNHOOKED)
def test_a_layout_without_an_adapter_is_declared_without_interventions(unhooked_folders, layout):
    bundle = load_pretrained(unhooked_folders[layout])
    capabilities = capabilities_of(bundle.model)
    assert not capabilities.hooked and capabilities.hooked_pass is None
    assert bundle.family.name == "pretrained-encoder-decoder"  # the name saved files and timelines record is kept
    assert capabilities.beam_search and capabilities.architecture == bundle.family.capabilities.architecture
    with pytest.raises(InterventionError) as error:
        served_tools(bundle.model)
    assert "\n" not in str(error.value) and "hooked pass" in str(error.value)


@pytest.mark.parametrize("layout", HOOKED)
def test_t5_marian_and_bart_still_declare_and_serve_interventions(tiny_bundles, layout):
    network = tiny_bundles[layout].model
    assert capabilities_of(network).hooked and family_of(network).name == "pretrained-encoder-decoder"
    assert served_tools(network) == tuple(tool for tool in INTERVENTION_TOOLS if tool is not InterventionTool.CIRCUITS)


def test_no_network_is_declared_able_to_do_what_its_code_does_not_serve(tiny_bundles, pre_norm_bundles, unhooked_folders):
    """For every pretrained layout built here: declared with a hooked pass exactly when it has one, which serves some
    of the interventions' tools and says for each of the others why not (an encoder-only model's with a head: the logit
    lens and patching, which read that head on the text; the others read a decoding)."""
    networks = [bundle.model for bundle in [*tiny_bundles.values(), *pre_norm_bundles.values()]]
    networks += [load_pretrained(folder).model for folder in unhooked_folders.values()]
    for network in networks:
        try:
            adapter = adapter_of(network)
        except InterventionError:
            adapter = None
        assert capabilities_of(network).hooked == (adapter is not None), network.config.describe()
        if adapter is not None:
            assert set(adapter.served_tools) | set(adapter.unserved) == set(INTERVENTION_TOOLS)
            if capabilities_of(network).architecture.has_decoder:
                assert adapter.served_tools, network.config.describe()
            else:
                expected = (InterventionTool.LOGIT_LENS, InterventionTool.PATCHING)
                assert adapter.served_tools == expected, network.config.describe()


def test_a_family_without_layouts_has_the_same_capabilities_for_every_network(tiny_bundles):
    for family in families():
        if family.layout_capabilities is None:
            network = object()  # never looked at: the family's own capabilities hold
            assert family.capabilities_for(network) is family.capabilities  # type: ignore[arg-type]
    encoder = tiny_bundles["bert-mlm"].model  # its layout says whether its heads can be knocked out and measured...
    expected = replace(
        family_of(encoder).capabilities,
        head_masking=True,
        queries_keys=QueriesKeys.ENCODER,  # ...its queries and keys read...
        measured_pass="model.attribution.stack_pass.measured_pass",
        objective=Objective.MASKED_LANGUAGE_MODEL,  # ...its head what it is scored on...
        hooked_pass="model.pretrained.families.hooked_pass",  # ...and its hooked pass what the corpus index reads
        hides_pieces=True,  # its attention mask hides a piece of its text in place (the report card's removal)
    )
    assert capabilities_of(encoder) == expected
    assert served_tools(encoder) == (InterventionTool.LOGIT_LENS, InterventionTool.PATCHING)  # its head read, its text patched


def test_the_command_line_says_in_one_line_that_an_unhooked_layout_has_no_lens(unhooked_folders, tmp_path, monkeypatch, capsys):
    from model.cli import main

    monkeypatch.chdir(tmp_path)
    code = main(["lens", "--model", unhooked_folders["mbart"], "--text", "le chat", "--out", "lens.csv"])
    err = capsys.readouterr().err
    assert code != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "mbart" in err and "hooked pass" in err and not (tmp_path / "lens.csv").exists()
