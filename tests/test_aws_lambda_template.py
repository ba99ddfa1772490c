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


BROWNOUT_S = 30 * 60


def _queue(template: dict, stack, name: str) -> dict:
    return template["Resources"][stack.get_logical_id(stack.queues[name].node.default_child)][
        "Properties"]


def test_the_queues_retry_schedule_outlasts_a_30_minute_brownout_and_no_invocation_outruns_its_timeout(
        synth):
    """From the template's own values: each queue-fed function's timeout, its queue's visibility
    timeout and maxReceiveCount, and the environment the functions read."""
    from infra.aws.lambdas.extraction import FINISH_MARGIN_S
    from infra.aws.sqs import MAX_VISIBILITY_S, retry_visibility_s
    from infra.settings import Settings

    template, stack = synth
    for name, spec in stack.settings.functions().items():
        if spec.queue is None or spec.handler != "infra.aws.lambdas.extraction.handler":
            continue
        function = _function(template, stack, name)
        env = function["Environment"]["Variables"]
        queue = _queue(template, stack, spec.queue)
        timeout_s = function["Timeout"]
        receives = int(queue["RedrivePolicy"]["maxReceiveCount"])
        # Nothing sleeps in the function for a model's backoff: one attempt per model.
        assert env["DOCLAKE_MODEL_MAX_ATTEMPTS"] == "1", name
        settings = Settings(model_max_attempts=int(env["DOCLAKE_MODEL_MAX_ATTEMPTS"]),
                            max_receives=int(env["DOCLAKE_MAX_RECEIVES"]))
        # The retry budget is the queue's: the delays between the deliveries of one message.
        delays = [retry_visibility_s(n) for n in range(1, receives)]
        assert all(0 < d <= MAX_VISIBILITY_S for d in delays)
        assert sum(delays) > BROWNOUT_S, (name, delays)
        # Every record ends by the invocation's deadline (its remaining time less the margin for
        # the flush); a delivery's own work fits inside it: the page render, then one attempt of
        # each model, each at most its timeout.
        assert timeout_s > FINISH_MARGIN_S
        models = 2 if settings.fallback_model else 1
        worst_delivery_s = (settings.read_timeout_s + models * settings.model_timeout_s
                            * settings.model_max_attempts)
        if name == "read":
            assert worst_delivery_s <= timeout_s - FINISH_MARGIN_S, (name, worst_delivery_s)
        # A message stays hidden while the invocation that holds it may still run.
        assert queue["VisibilityTimeout"] >= timeout_s, name
