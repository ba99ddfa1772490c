"""Lambda's limits as the synthesized template sets them (issue 22): /tmp sized from the file
limit, and the retry schedule against the functions' timeouts and a 30-minute brownout."""

from __future__ import annotations

import pytest

pytest.importorskip("aws_cdk", reason="the cdk extra is not installed (pip install -e '.[cdk]')")

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    from aws_cdk.assertions import Template

    from infra.aws.cdk.app import build

    app, stack = build(str(tmp_path_factory.mktemp("cdk")))
    return Template.from_stack(stack).to_json(), stack


def _function(template: dict, stack, name: str) -> dict:
    logical = stack.get_logical_id(stack.functions[name].node.default_child)
    return template["Resources"][logical]["Properties"]


def test_tmp_holds_the_largest_file_its_copy_and_the_converted_pdf(synth):
    template, stack = synth
    settings = stack.settings
    for name in ("split", "read", "sheet", "convert"):
        props = _function(template, stack, name)
        env = props["Environment"]["Variables"]
        file_limit = int(env["DOCLAKE_MAX_FILE_BYTES"])
        converted = int(env["DOCLAKE_MAX_CONVERTED_BYTES"])
        assert file_limit == settings.max_upload_bytes
        tmp_mb = props["EphemeralStorage"]["Size"]
        assert tmp_mb * MIB >= 2 * file_limit + converted + 512 * MIB, (name, tmp_mb)
        assert tmp_mb <= 10_240
