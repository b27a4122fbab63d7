"""File roles and a source file's tests, on real-looking layouts of several ecosystems."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lore.index import roles
from lore.index.roles import ROLES, SourceTestIndex, file_role

pytestmark = pytest.mark.storage_independent  # no index: CI's postgres pass may skip

# Imported under another name: pytest would collect a function called tests_for.
find_tests = roles.tests_for

# Paths as they are in the projects named (trimmed), with the role each should get.
FLASK = {
    "src/flask/__init__.py": "source",
    "src/flask/app.py": "source",
    "src/flask/testing.py": "source",
    "src/flask/json/__init__.py": "source",
    "src/flask/json/tag.py": "source",
    "src/flask/templates/layout.html": "source",
    "tests/conftest.py": "test",
    "tests/test_basic.py": "test",
    "tests/test_json.py": "test",
    "tests/test_json_tag.py": "test",
    "tests/test_testing.py": "test",
    "tests/test_apps/cliapp/inner1/inner2/__init__.py": "test",
    "tests/static/index.html": "test",
    "docs/conf.py": "docs",
    "docs/api.rst": "docs",
    "docs/changes.rst": "changelog",
    "docs/_static/flask-logo.png": "docs",
    "examples/tutorial/flaskr/db.py": "example",
    "examples/tutorial/tests/test_db.py": "example",
    "examples/tutorial/setup.py": "example",
    "CHANGES.rst": "changelog",
    "README.rst": "docs",
    "LICENSE.rst": "community",
    "CONTRIBUTING.rst": "community",
    "CODE_OF_CONDUCT.md": "community",
    ".github/ISSUE_TEMPLATE/bug-report.md": "community",
    ".github/pull_request_template.md": "community",
    ".github/workflows/tests.yaml": "config",
    ".github/dependabot.yml": "config",
    ".pre-commit-config.yaml": "config",
    ".gitignore": "config",
    ".editorconfig": "config",
    "pyproject.toml": "config",
    "setup.py": "config",
    "setup.cfg": "config",
    "tox.ini": "config",
    "MANIFEST.in": "config",
    "requirements/dev.txt": "config",
    "requirements/tests-pallets-min.txt": "config",
    "uv.lock": "generated",
}

DJANGO = {
    "django/db/models/query.py": "source",
    "django/contrib/admin/static/admin/js/actions.js": "source",
    "django/contrib/admin/static/admin/js/vendor/jquery/jquery.js": "vendored",
    "django/contrib/admin/static/admin/js/vendor/jquery/jquery.min.js": "vendored",
    "django/conf/locale/fr/LC_MESSAGES/django.po": "source",
    "django/test/testcases.py": "test",  # Django's own test framework lives in a test folder
    "tests/queries/tests.py": "test",
    "tests/queries/models.py": "test",
    "js_tests/admin/actions.test.js": "test",
    "docs/releases/5.0.txt": "changelog",
    "docs/ref/models/querysets.txt": "docs",
    "docs/Makefile": "docs",
    "AUTHORS": "community",
    "LICENSE.python": "community",
    "Gruntfile.js": "source",
    "package.json": "config",
    "eslint.config.mjs": "config",
    "scripts/manage_translations.py": "source",
}

GO_MODULE = {
    "cmd/server/main.go": "source",
    "internal/store/store.go": "source",
    "internal/store/store_test.go": "test",
    "internal/store/testdata/users.json": "test",
    "internal/store/zz_generated.deepcopy.go": "generated",
    "api/v1/service.pb.go": "generated",
    "api/v1/service_grpc.pb.go": "generated",
    "api/v1/service.proto": "source",
    "pkg/build/build.go": "source",  # a package named build is source
    "vendor/github.com/pkg/errors/errors.go": "vendored",
    "vendor/modules.txt": "vendored",
    "go.mod": "config",
    "go.sum": "generated",
    "Makefile": "config",
    ".golangci.yml": "config",
    "Dockerfile": "config",
    "docs/design.md": "docs",
    "CHANGELOG.md": "changelog",
    "LICENSE": "community",
}

TS_MONOREPO = {
    "packages/core/src/parser.ts": "source",
    "packages/core/src/index.ts": "source",
    "packages/core/src/__tests__/parser.test.ts": "test",
    "packages/core/src/__snapshots__/parser.test.ts.snap": "test",
    "packages/core/test/lexer.spec.ts": "test",
    "packages/core/dist/index.js": "generated",
    "packages/core/dist/index.d.ts": "generated",
    "packages/core/dist-esm/index.js": "generated",
    "deno_dist/utils/url.ts": "generated",  # hono's Deno build of src/, checked in
    "esm-dist/index.js": "generated",
    "src/utils/dist_utils.ts": "source",
    "distance/metric.ts": "source",
    "packages/core/package.json": "config",
    "packages/core/tsconfig.build.json": "config",
    "packages/core/CHANGELOG.md": "changelog",
    "packages/web/src/components/Button.tsx": "source",
    "packages/web/src/components/Button.test.tsx": "test",
    "apps/site/next.config.mjs": "config",
    "apps/site/.next/server/page.js": "generated",
    "apps/site/public/vendor.min.js": "generated",
    "e2e/login.spec.ts": "test",
    ".changeset/happy-dogs-run.md": "changelog",
    "node_modules/react/index.js": "vendored",
    "pnpm-lock.yaml": "generated",
    "pnpm-workspace.yaml": "config",
    "vitest.config.ts": "config",
    ".eslintrc.cjs": "config",
    "tsconfig.json": "config",
}

RUST_CRATE = {
    "src/lib.rs": "source",
    "src/parser/mod.rs": "source",
    "src/parser/lexer.rs": "source",
    "tests/parser.rs": "test",
    "tests/common/mod.rs": "test",
    "benches/throughput.rs": "test",
    "examples/basic.rs": "example",
    "build.rs": "config",
    "Cargo.toml": "config",
    "Cargo.lock": "generated",
    "target/debug/build/out.rs": "generated",
    ".cargo/config.toml": "config",
    "LICENSE-MIT": "community",
    "LICENSE-APACHE": "community",
    "README.md": "docs",
}

MAVEN = {
    "pom.xml": "config",
    "core/pom.xml": "config",
    "core/src/main/java/com/acme/core/Parser.java": "source",
    "core/src/main/java/com/acme/core/Digit.java": "source",
    "core/src/main/resources/application.properties": "config",
    "core/src/test/java/com/acme/core/ParserTest.java": "test",
    "core/src/test/java/com/acme/core/ParserIT.java": "test",
    "core/src/test/resources/sample.json": "test",
    "app/src/main/kotlin/com/acme/app/Main.kt": "source",
    "app/src/test/kotlin/com/acme/app/MainTest.kt": "test",
    "app/src/androidTest/java/com/acme/app/UiTest.java": "test",
    "mvnw": "config",
    ".mvn/wrapper/maven-wrapper.properties": "config",
    "build.gradle.kts": "config",
}

OTHERS = {
    # Found by an audit on gson, zod, ripgrep, rack and jq (rules 5)
    "tslint.json": "config",
    "ci/build_deb.sh": "config",
    "Cross.toml": "config",
    "snapcraft.yaml": "config",
    "ISSUE_TEMPLATE.md": "community",
    "SECURITY_POLICY.md": "community",
    "sig/v1.7.1/sha256sum.txt": "generated",
    "ChangeLog": "changelog",
    "src/parser.y": "source",
    "README.rdoc": "docs",
    # Ruby
    "lib/rack/request.rb": "source",
    "spec/rack/request_spec.rb": "test",
    "test/spec_request.rb": "test",
    "rack.gemspec": "config",
    "Gemfile": "config",
    "Gemfile.lock": "generated",
    # C / C++
    "src/net/socket.c": "source",
    "include/net/socket.h": "source",
    "tests/socket_test.cc": "test",
    "third_party/zlib/inflate.c": "vendored",
    "CMakeLists.txt": "config",
    "cmake/FindZlib.cmake": "config",
    # C#
    "src/Acme.Core/Parser.cs": "source",
    "src/Acme.Core/Acme.Core.csproj": "config",
    "src/Acme.Core/Properties/Resources.Designer.cs": "generated",
    "tests/Acme.Core.Tests/ParserTests.cs": "test",
    "tests/Acme.Core.Tests.Integration/ParserFlow.cs": "test",
    "Acme.sln": "config",
    # PHP
    "src/Http/Request.php": "source",
    "tests/Http/RequestTest.php": "test",
    "composer.json": "config",
    "composer.lock": "generated",
    "phpunit.xml.dist": "config",
    # Swift
    "Sources/Networking/Client.swift": "source",
    "Tests/NetworkingTests/ClientTests.swift": "test",
    "Package.swift": "config",
    # Python generated code and packaging
    "proto/user_pb2.py": "generated",
    "proto/user_pb2_grpc.py": "generated",
    "poetry.lock": "generated",
    "newsfragments/1234.bugfix.rst": "changelog",
    "changelog.d/20240101_fix.md": "changelog",
    "releasenotes/notes/fix-x-1a2b.yaml": "changelog",
    "HISTORY.md": "changelog",
    "NEWS": "changelog",
    "SECURITY.md": "community",
    "src/history.py": "source",  # a module called history is not a changelog
    "src/contests/views.py": "source",  # not a test folder
    "samples/quickstart/main.py": "example",
}


@pytest.mark.parametrize(
    "layout", [FLASK, DJANGO, GO_MODULE, TS_MONOREPO, RUST_CRATE, MAVEN, OTHERS], ids=lambda d: next(iter(d))
)
def test_roles_of_real_layouts(layout):
    got = {path: file_role(path) for path in layout}
    assert got == layout
    assert set(got.values()) <= set(ROLES)


def test_settings_and_data_files_anywhere_are_config_and_a_docs_package_has_tests():
    """An audit on cobra and a polyglot repository: `k8s/deploy.yaml` and
    `config/limits.json` ranked with source for "payment order cart"; Go's
    `doc/man_docs_test.go` (cobra's doc package) was docs, so `--role test`
    never found it; `src/vendors/client.py` (a marketplace's vendors) was vendored."""
    layout = {
        "k8s/deploy.yaml": "config",
        "config/settings.yaml": "config",
        "config/limits.json": "config",
        "src/app/defaults.toml": "config",
        "conf/app.ini": "config",
        "doc/man_docs_test.go": "test",
        "doc/md_docs.go": "docs",
        "docs/test_snippets.py": "test",
        "docs/conf.py": "docs",
        "examples/app/tests/test_x.py": "example",  # an example's own tests stay the example's
        "src/vendors/client.py": "source",
        "vendor/github.com/x/y.go": "vendored",
    }
    assert {path: file_role(path) for path in layout} == layout


def test_generated_marker_in_the_text():
    go = "// Code generated by protoc-gen-go. DO NOT EDIT.\n// versions:\npackage v1\n"
    assert file_role("api/v1/types.go", go) == "generated"
    assert file_role("api/v1/types.go", "package v1\n") == "source"
    rails = "# This file is auto-generated from the current state of the database.\n"
    assert file_role("db/schema.rb", rails) == "generated"
    late = "package x\n" + "\n" * 10 + "// this mentions @generated much later\n"
    assert file_role("x.go", late) == "source"
    # gson commits its javadoc pages: ~100 HTML files ranked as docs before UserGuide.md.
    javadoc = '<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    javadoc += "<!-- Generated by javadoc (17) on Mon Jan 01 -->\n<title>Gson</title>\n"
    assert file_role("gson/docs/javadocs/com/google/gson/Gson.html", javadoc) == "generated"
    assert file_role("UserGuide.md", "# Gson User Guide\n\nGson is a Java library.\n") == "docs"


def test_bison_and_flex_output_is_generated():
    """jq commits its bison and flex output: src/parser.c was a likely source file
    in recall. flex puts its banner after a few #line directives."""
    bison = (
        "/* A Bison parser, made by GNU Bison 3.8.2.  */\n\n/* Bison implementation */\nint yyparse(void);\n"
    )
    assert file_role("src/parser.c", bison) == "generated"
    assert file_role("src/parser.h", bison) == "generated"
    flex = '#line 2 "src/lexer.c"\n\n#line 4 "src/lexer.c"\n\n#define  YY_INT_ALIGNED short int\n\n'
    flex += "/* A lexical scanner generated by flex */\n\n#define FLEX_SCANNER\n"
    assert file_role("src/lexer.c", flex) == "generated"
    assert file_role("src/parser.y", "%{\n/* parser for jq, fed to Bison */\n%}\n") == "source"


# -- tests_for -------------------------------------------------------------------


def test_tests_for_python_layouts():
    paths = list(FLASK)
    assert find_tests("src/flask/testing.py", paths) == ["tests/test_testing.py"]
    assert find_tests("src/flask/json/__init__.py", paths) == ["tests/test_json.py"]
    assert find_tests("src/flask/json/tag.py", paths) == ["tests/test_json_tag.py"]
    assert find_tests("src/flask/app.py", paths) == []  # no test_app.py in flask
    assert find_tests("docs/conf.py", paths) == []


def test_tests_for_python_mirrored_tree_and_neighbouring_tests():
    paths = [
        "src/shop/cart.py",
        "src/shop/billing/invoice.py",
        "tests/shop/test_cart.py",
        "tests/shop/billing/test_invoice.py",
        "tests/other/test_invoice.py",
        "src/shop/payment.py",
        "src/shop/payment_test.py",
    ]
    assert find_tests("src/shop/cart.py", paths) == ["tests/shop/test_cart.py"]
    assert find_tests("src/shop/billing/invoice.py", paths) == ["tests/shop/billing/test_invoice.py"]
    assert find_tests("src/shop/payment.py", paths) == ["src/shop/payment_test.py"]


def test_tests_for_go_ts_rust_java_and_others():
    go = list(GO_MODULE)
    assert find_tests("internal/store/store.go", go) == ["internal/store/store_test.go"]
    assert find_tests("cmd/server/main.go", go) == []

    ts = list(TS_MONOREPO)
    assert find_tests("packages/core/src/parser.ts", ts) == ["packages/core/src/__tests__/parser.test.ts"]
    assert find_tests("packages/web/src/components/Button.tsx", ts) == [
        "packages/web/src/components/Button.test.tsx"
    ]
    monorepo = [*ts, "packages/web/src/parser.ts", "packages/web/test/parser.spec.ts"]
    assert find_tests("packages/web/src/parser.ts", monorepo) == ["packages/web/test/parser.spec.ts"]
    assert find_tests("packages/core/src/parser.ts", monorepo) == [
        "packages/core/src/__tests__/parser.test.ts"
    ]

    rust = list(RUST_CRATE)
    assert find_tests("src/parser/mod.rs", rust) == ["tests/parser.rs"]
    assert find_tests("src/parser/lexer.rs", rust) == []
    # A crate's tests folder tests that crate (ripgrep: crates/matcher/tests/util.rs
    # was listed as the tests of crates/regex/src/util.rs and crates/printer/src/util.rs).
    workspace = ["crates/regex/src/util.rs", "crates/matcher/src/util.rs", "crates/matcher/tests/util.rs"]
    assert find_tests("crates/regex/src/util.rs", workspace) == []
    assert find_tests("crates/matcher/src/util.rs", workspace) == ["crates/matcher/tests/util.rs"]

    maven = list(MAVEN)
    assert find_tests("core/src/main/java/com/acme/core/Parser.java", maven) == [
        "core/src/test/java/com/acme/core/ParserIT.java",
        "core/src/test/java/com/acme/core/ParserTest.java",
    ]
    assert find_tests("app/src/main/kotlin/com/acme/app/Main.kt", maven) == [
        "app/src/test/kotlin/com/acme/app/MainTest.kt"
    ]

    others = list(OTHERS)
    assert find_tests("lib/rack/request.rb", others) == ["spec/rack/request_spec.rb"]
    assert find_tests("src/net/socket.c", others) == ["tests/socket_test.cc"]
    assert find_tests("src/Acme.Core/Parser.cs", others) == ["tests/Acme.Core.Tests/ParserTests.cs"]
    assert find_tests("src/Http/Request.php", others) == ["tests/Http/RequestTest.php"]
    assert find_tests("Sources/Networking/Client.swift", others) == [
        "Tests/NetworkingTests/ClientTests.swift"
    ]


def test_go_tests_are_those_of_the_package_folder():
    """Gin: render/json.go was offered binding/json_test.go, the tests of another
    package; a Go package's tests always sit in its own folder."""
    paths = [
        "binding/json.go",
        "binding/json_test.go",
        "render/json.go",
        "render/render_test.go",
        "json_test.go",
    ]
    assert find_tests("render/json.go", paths) == []
    assert find_tests("binding/json.go", paths) == ["binding/json_test.go"]
    assert find_tests("json.go", [*paths, "json.go"]) == ["json_test.go"]


def test_ruby_spec_prefixed_tests_as_rack_names_them():
    """Rack's tests are test/spec_request.rb, test/spec_utils.rb: recall named none."""
    paths = ["lib/rack/request.rb", "lib/rack/helper.rb", "test/spec_request.rb", "spec/spec_helper.rb"]
    assert roles.file_role("test/spec_request.rb") == "test"
    assert find_tests("lib/rack/request.rb", paths) == ["test/spec_request.rb"]
    assert find_tests("lib/rack/helper.rb", paths) == []  # spec_helper.rb is RSpec's setup, not its test
    assert roles.file_role("lib/bundler/spec_set.rb") == "source"  # a name alone makes no test


def test_tests_never_cross_ecosystems():
    paths = ["web/parser.ts", "server/parser.py", "tests/test_parser.py", "web/parser.test.ts"]
    assert find_tests("server/parser.py", paths) == ["tests/test_parser.py"]
    assert find_tests("web/parser.ts", paths) == ["web/parser.test.ts"]


def test_source_test_index_over_this_repository():
    """Every test module of Lore that names a source module is found for it."""
    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    paths = listed.stdout.split()
    index = SourceTestIndex(paths)
    assert index.tests_for("src/lore/index/roles.py") == ["tests/test_roles.py"]
    assert index.tests_for("src/lore/index/gitrepo.py") == ["tests/test_gitrepo.py"]
    assert file_role("src/lore/index/roles.py") == "source"
    got = {path: file_role(path) for path in paths}
    assert got["tests/conftest.py"] == "test" and got["docs/architecture.md"] == "docs"
    assert got["bench/history_scale.py"] == "test" and got["pyproject.toml"] == "config"
