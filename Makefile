# Two commands on a fresh machine: `make demo` and `make test`.
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
DEMO_HOME ?= .doclake-demo
# The Lambda images install exactly this lock (with hashes); the venvs here take the same versions
# as constraints (hashes stripped: pip would demand a hash for every other package too), so the
# tests run on what is deployed (tests/test_aws_build.py).
LOCK := infra/aws/images/requirements.lock
PINS := $(VENV)/lock-pins.txt

.PHONY: install runtime demo test lint mutants bench synth deploy lock docs clean

# The runtime set alone (no CDK, moto, cfn-lint, great-expectations/scipy, scikit-learn): what
# the pipeline, `doclake sql` and the dashboard import. `make demo` needs nothing more.
$(BIN)/.runtime: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	sed -n 's/^\([A-Za-z0-9_.-]*==[^ ]*\).*/\1/p' $(LOCK) > $(PINS)
	$(BIN)/pip install --quiet -c $(PINS) -e .
	touch $@

# Everything: the runtime set plus the test, lint, AWS, CDK and `lake check` tool chain.
$(BIN)/.installed: pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	sed -n 's/^\([A-Za-z0-9_.-]*==[^ ]*\).*/\1/p' $(LOCK) > $(PINS)
	$(BIN)/pip install --quiet -c $(PINS) -e '.[dev]'
	touch $@ $(BIN)/.runtime

runtime: $(BIN)/.runtime

install: $(BIN)/.installed

demo: runtime
	rm -rf $(DEMO_HOME)
	$(BIN)/doclake run examples/*.pdf --home $(DEMO_HOME) --fields nda
	$(BIN)/doclake sql --home $(DEMO_HOME) "SELECT d.source_name, j.status, j.pages, \
	  round(l.seconds, 2) AS seconds FROM jobs j JOIN documents d USING (document_id) \
	  JOIN job_latency l USING (job_id) ORDER BY d.source_name"
	$(BIN)/doclake sql --home $(DEMO_HOME) "SELECT d.source_name, r.effective_date, \
	  r.jurisdiction, r.party, r.term FROM results r JOIN documents d USING (document_id) \
	  ORDER BY d.source_name"
	$(BIN)/doclake sql --home $(DEMO_HOME) "SELECT event_type, count(*) AS events FROM events \
	  GROUP BY event_type ORDER BY events DESC"
	$(BIN)/doclake search --home $(DEMO_HOME) "confidential information" --limit 3

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: lint
	$(BIN)/python -m pytest
	$(MAKE) mutants

# Deliberate breaks of the docs' promises, each of which must make a named test fail
# (tests/mutation/mutants.py); run on a copy of the repository, never on this tree.
mutants: install
	$(BIN)/python -m tests.mutation.run

# The CloudFormation template of the AWS deployment, with no account and no Docker.
synth: install
	JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 $(BIN)/python -m infra.aws.cdk.app cdk.out

# Deploy (a real account, Docker, the CDK CLI): BuildKit's default provenance attestation makes
# the pushed image an index, which Lambda refuses; off here. Settings: make deploy CDK_ARGS='-c ...'
deploy: install
	BUILDX_NO_DEFAULT_ATTESTATIONS=1 cdk deploy $(CDK_ARGS)

# Refresh the images' lock after a dependency change in pyproject.toml (keeps the pins it can).
lock: install
	$(BIN)/pip install --quiet pip-tools
	$(BIN)/pip-compile --quiet --allow-unsafe --extra=aws --generate-hashes --no-emit-find-links \
	  --no-emit-index-url --strip-extras --output-file=$(LOCK) pyproject.toml \
	  infra/aws/images/lambda.in

bench: install
	$(BIN)/doclake bench pipeline

clean:
	rm -rf $(VENV) $(DEMO_HOME) .pytest_cache .ruff_cache

# The docs site (docs/, mkdocs.yml) into site/; `make test` builds it too (tests/test_docs_examples.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
