"""The role of each file in its project: source, test, docs, changelog, config, ...

Retrieval for "which code does this task touch" should rank source first,
list a source file's tests beside it, and keep docs, changelogs, lock files
and vendored code out of the way unless asked for. This module names the
role of a path by the conventions of the language ecosystems (Python, JS/TS,
Go, Rust, Java/Kotlin, Ruby, C/C++, C#, PHP, Swift, Elixir, Dart), never by a
list made for one repository. It looks at the path only (optionally at the
first lines of the text, for "generated" markers), so it is cheap enough to
run on every file at index time.

Roles, and what decides them (the first rule that matches wins):

=============  ================================================================
role           examples
=============  ================================================================
``vendored``   a folder of third-party code anywhere in the path: ``vendor/``,
               ``third_party/``, ``node_modules/``, ``site-packages/``, ``Pods/``
``generated``  lock files (``poetry.lock``, ``package-lock.json``, ``go.sum``,
               ``Cargo.lock``...), minified files and source maps, protobuf and
               other generator output (``*_pb2.py``, ``*.pb.go``,
               ``*.generated.*``, ``*.g.dart``, ``*.Designer.cs``), build output
               at the top of the project or of a monorepo package (``dist/``,
               ``deno_dist/``, ``dist-esm/``, ``target/``, ``out/``), caches
               (``__pycache__/``, ``coverage/``); with `text`, a "Code
               generated ... DO NOT EDIT" / ``@generated`` marker in the
               first lines
``changelog``  ``CHANGES``, ``CHANGELOG``, ``HISTORY``, ``NEWS``, ``RELEASE
               NOTES`` (any case, any text extension), fragments in
               ``changes/``, ``changelog.d/``, ``newsfragments/``,
               ``.changeset/``, ``releasenotes/``, ``docs/releases/``,
               ``whatsnew/``
``community``  ``LICENSE``/``COPYING``/``NOTICE``, ``AUTHORS``,
               ``CODE_OF_CONDUCT``, ``CONTRIBUTING``, ``SECURITY``,
               ``SUPPORT``, ``CODEOWNERS``, ``.github`` issue/PR templates and
               ``FUNDING.yml``
``test``       the outermost role folder is a test folder (``tests/``,
               ``test/``, ``testing/``, ``spec/``, ``__tests__/``,
               ``testdata/``, ``e2e/``, ``src/test/`` in Maven/Gradle,
               ``Foo.Tests/`` projects, benchmarks ``bench/``, ``benches/``), or
               the name says test (``test_x.py``, ``x_test.go``,
               ``x.test.ts``, ``x.spec.js``, ``FooTest.java``, ``x_spec.rb``,
               ``FooTests.cs``, ``conftest.py``...), in a docs folder too
``docs``       the outermost role folder is ``docs/``, ``doc/``,
               ``documentation/``, ``website/``, ``man/``; or a text document
               (``.md``, ``.rst``, ``.adoc``, ``.txt``...) anywhere else
``example``    the outermost role folder is ``examples/``, ``samples/``,
               ``demo/`` (so an example's own tests are the example's)
``config``     build, packaging, CI and tool settings: ``pyproject.toml``,
               ``setup.py``/``setup.cfg``, ``tox.ini``, ``package.json``,
               ``tsconfig*.json``, ``Cargo.toml``, ``go.mod``, ``pom.xml``,
               ``build.gradle``, ``*.csproj``, ``Gemfile``, ``composer.json``,
               ``Makefile``, ``CMakeLists.txt``, ``Dockerfile``, CI files
               (``.github/workflows/``, ``.gitlab-ci.yml``, ...), tool configs
               (``*.config.js``, ``.eslintrc``, ``mypy.ini``...), dotfiles;
               settings and data files anywhere (``.yaml``, ``.json``,
               ``.toml``, ``.ini``, ``.properties``, ``.xml``...)
``source``     everything else
=============  ================================================================

"Outermost role folder": the first folder on the path from the project
root that is a test, docs or example folder decides, so
``examples/app/tests/test_x.py`` is an example and ``tests/examples/x.py``
a test.

:func:`tests_for` (and :class:`SourceTestIndex` for many lookups) finds the
tests that belong to a source file by the ecosystems' naming conventions.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

__all__ = ["ROLES", "RULES_VERSION", "SourceTestIndex", "file_role", "tests_for"]

# Bump when a rule changes: the next sync classifies every indexed file again.
# 2: qualified build output folders (deno_dist/, dist-esm/, out-tsc/).
# 3: test projects with a kind after "Tests" (Acme.Tests.Integration/).
# 4: bison, flex and re2c output (banners in the first 15 lines); Ruby's
#    spec_x.rb inside a test folder.
# 5: documentation generators' output (javadoc...), checksum lists, ci/ scripts,
#    lint settings, issue templates and security policies anywhere.
# 6: settings and data files anywhere are config (YAML, JSON, TOML, INI, XML...);
#    a test-named file in a docs folder is a test; vendors/ is a name of one's own.
# 7: a Jupyter notebook is source, outside docs and example folders (its cells are indexed).
RULES_VERSION = 7

ROLES = (
    "source",
    "test",
    "docs",
    "changelog",
    "config",
    "generated",
    "vendored",
    "example",
    "community",
)

# -- folders -------------------------------------------------------------------

_VENDORED_DIRS = frozenset(
    """
    vendor vendored _vendor third_party third-party thirdparty 3rdparty 3rd_party 3rd-party
    node_modules bower_components jspm_packages web_modules site-packages pods carthage
    """.split()
)
# Output and cache folders wherever they are: no one writes source under these names.
_GENERATED_ANYWHERE = frozenset(
    """
    __pycache__ __generated__ generated .next .nuxt .svelte-kit .turbo .parcel-cache .mypy_cache
    .pytest_cache .ruff_cache .tox .nox .gradle htmlcov .nyc_output _build
    """.split()
)
# Build output folders only at the top of the project or of a monorepo package
# (`packages/x/dist/`): deeper down, `build` is a fine package name (go/build).
# A checked-in top-level `build/` is usually build tooling (scripts), not output.
_GENERATED_AT_TOP = {"dist", "target", "out", "obj", "lib-cov", "storybook-static"}
# ... and their qualified forms: deno_dist, esm-dist, dist-esm, dist_types, out-tsc.
_QUALIFIED_OUTPUT = re.compile(
    r"[a-z0-9]+[-_]dist|dist[-_](?:esm|cjs|es|umd|types|node|browser|web|deno|bundle|min|lib|prod)|out[-_]tsc"
)
_MONOREPO_DIRS = {"packages", "apps", "libs", "crates", "modules", "services", "plugins", "extensions"}

_TEST_DIRS = frozenset(
    """
    test tests testing spec specs __tests__ __mocks__ __snapshots__ testdata test-data test_data
    testfixtures e2e unittest unittests unit_tests integration_tests integration-tests
    functional_tests cypress playwright bench benches benchmark benchmarks androidtest
    """.split()
)  # androidtest: Android's src/androidTest/; benchmarks count as tests (code that exercises code)
# Test projects and crates named after what they test: Foo.Tests, foo-tests,
# js_tests, Foo.Tests.Integration, FooTests (the last one case-sensitive:
# "contests" is not one).
_TEST_DIR_NAME = re.compile(
    r"[._-](?:unit|integration|e2e)?tests?(?:[._-](?:unit|integration|functional|e2e))?$", re.IGNORECASE
)
_TEST_DIR_CAMEL = re.compile(r"[a-z0-9](?:Unit|Integration|UI)?Tests$")
_DOC_DIRS = {"docs", "doc", "documentation", "website", "man", "manpages", "_docs", "docsite"}
_EXAMPLE_DIRS = {"examples", "example", "samples", "sample", "demo", "demos", "_examples"}
_CHANGELOG_DIRS = frozenset(
    """
    changes changelog changelog.d changes.d newsfragments news .changeset .changesets releasenotes
    release-notes release_notes releases whatsnew
    """.split()
)

# -- file names ------------------------------------------------------------------

_TEXT_EXTENSIONS = {"", ".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc", ".rdoc", ".org", ".textile"}
_DOC_EXTENSIONS = _TEXT_EXTENSIONS - {""} | {".pod", ".tex"}
# Settings and data, wherever they are (k8s/deploy.yaml, config/limits.json): not code to change for a task.
_DATA_EXTENSIONS = frozenset(
    ".yaml .yml .json .jsonc .json5 .toml .ini .cfg .conf .properties .env .plist .xml".split()
)
_CHANGELOG_STEMS = frozenset(
    """
    changes changelog change_log change-log history news releases release_notes release-notes
    releasenotes whatsnew whats_new whats-new
    """.split()
)
_COMMUNITY_STEMS = frozenset(
    """
    license licence licenses licences copying copyright notice authors contributors maintainers
    code_of_conduct code-of-conduct contributing security support governance codeowners funding
    backers sponsors patents
    """.split()
)
_LOCK_FILES = frozenset(
    """
    package-lock.json npm-shrinkwrap.json yarn.lock pnpm-lock.yaml bun.lockb bun.lock deno.lock
    poetry.lock pipfile.lock pdm.lock uv.lock cargo.lock go.sum gemfile.lock composer.lock mix.lock
    podfile.lock packages.lock.json paket.lock gradle.lockfile flake.lock pubspec.lock
    package.resolved cartfile.resolved manifest.toml
    """.split()
)  # manifest.toml: Julia's resolved environment
_GENERATED_NAME = re.compile(
    r"(?:\.min\.(?:js|css|mjs)|\.(?:js|css|mjs)\.map"
    r"|_pb2(?:_grpc)?\.pyi?|\.pb\.(?:go|cc|h|swift)|\.pb\.gw\.go|_grpc\.pb\.go|_pb\.(?:js|d\.ts|ts)"
    r"|\.generated\.[^/]+|\.gen\.(?:go|ts|js|cs)|_generated\.(?:go|py|ts|rs)|\.g\.(?:dart|cs|i\.cs)"
    r"|\.freezed\.dart|\.designer\.cs|\.pyc|\.pyo|\.class|\.o|\.so|\.dll|\.exe|\.wasm)$"
    r"|^zz_generated[^/]*\.go$|^bindata\.go$|^(?:sha\d*sums?|checksums?|md5sums?)(?:\.txt)?$|\.sha(?:1|256|512)$",
    re.IGNORECASE,
)
_GENERATED_MARKER = re.compile(
    r"code generated .* do not edit|@generated|auto-?generated|generated by .*do not (?:edit|modify)"
    r"|this file (?:is|was) (?:automatically )?generated"
    r"|generated by (?:javadoc|doxygen|jsdoc|typedoc|rustdoc|sphinx|pdoc|godoc|yard|rdoc)\b",
    re.IGNORECASE,
)
# Banners parser generators put a little lower (flex's comes after its #line
# directives): jq commits src/parser.c, src/lexer.c and their headers.
_TOOL_BANNER = re.compile(
    r"A Bison parser, made by GNU Bison|A lexical scanner generated by flex|Generated by re2c"
)
# Build, packaging and tool settings of each ecosystem (Python, JS/TS, Go, Rust,
# JVM, .NET, Ruby, PHP, Elixir, Dart, Swift, Haskell, OCaml, C/C++, containers, CI).
_CONFIG_FILES = frozenset(
    """
    pyproject.toml setup.py setup.cfg tox.ini noxfile.py pytest.ini mypy.ini ruff.toml pylintrc
    manifest.in pipfile environment.yml environment.yaml requirements.in hatch.toml conftest.ini
    package.json tsconfig.json jsconfig.json deno.json deno.jsonc bower.json lerna.json nx.json
    turbo.json pnpm-workspace.yaml rush.json angular.json vercel.json netlify.toml go.mod go.work
    cargo.toml build.rs rust-toolchain rust-toolchain.toml clippy.toml rustfmt.toml pom.xml
    build.gradle build.gradle.kts settings.gradle settings.gradle.kts gradle.properties gradlew
    gradlew.bat mvnw mvnw.cmd build.sbt nuget.config global.json directory.build.props
    directory.build.targets directory.packages.props gemfile rakefile guardfile composer.json
    phpunit.xml phpunit.xml.dist phpstan.neon mix.exs pubspec.yaml analysis_options.yaml
    package.swift podfile cartfile stack.yaml cabal.project dune-project makefile gnumakefile
    cmakelists.txt meson.build meson_options.txt configure.ac configure.in makefile.am makefile.in
    build build.bazel workspace workspace.bazel module.bazel sconstruct conanfile.txt conanfile.py
    vcpkg.json justfile taskfile.yml taskfile.yaml procfile vagrantfile docker-compose.yml
    docker-compose.yaml compose.yml compose.yaml jenkinsfile azure-pipelines.yml appveyor.yml
    bitbucket-pipelines.yml cloudbuild.yaml codecov.yml renovate.json mkdocs.yml
    sonar-project.properties skaffold.yaml tiltfile flake.nix shell.nix default.nix
    tslint.json tslint.yaml biome.json biome.jsonc dprint.json snapcraft.yaml cross.toml deny.toml
    release.toml dist-workspace.toml goreleaser.yml goreleaser.yaml
    """.split()
)
_CONFIG_NAME = re.compile(
    r"^(?:requirements[\w.-]*\.(?:txt|in)|constraints[\w.-]*\.txt|dockerfile(?:\.[\w.-]+)?|[\w.-]+\.dockerfile"
    r"|tsconfig[\w.-]*\.json|[\w.-]+\.config\.(?:js|cjs|mjs|ts|cts|mts|json)"
    r"|babel\.config\.[\w]+|\.?eslintrc[\w.]*|\.?prettierrc[\w.]*|\.?stylelintrc[\w.]*"
    r"|[\w.-]+\.(?:csproj|fsproj|vbproj|vcxproj|sln|props|targets|gemspec|cabal|mk|cmake|bzl|nuspec)"
    r"|cmakelists\.txt|docker-compose[\w.-]*\.ya?ml)$",
    re.IGNORECASE,
)
_LICENSE_NAME = re.compile(r"^(?:licen[sc]es?|copying|notice|copyright)(?:[-_.]|$)")
_CI_DIRS = {".github", ".gitlab", ".circleci", ".buildkite", ".azure-pipelines", ".ci", ".woodpecker", "ci"}
_EDITOR_DIRS = {".vscode", ".idea", ".devcontainer", ".husky", ".cargo", ".mvn", ".config"}

# -- tests by name ---------------------------------------------------------------

# Extension families: a test belongs to a source of its own ecosystem.
_FAMILY = {}
for _family, _extensions in {
    "python": (".py", ".pyi", ".pyx"),
    "js": (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte"),
    "go": (".go",),
    "rust": (".rs",),
    "jvm": (".java", ".kt", ".kts", ".scala", ".groovy"),
    "ruby": (".rb",),
    "c": (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".m", ".mm"),
    "dotnet": (".cs", ".fs", ".vb"),
    "php": (".php",),
    "swift": (".swift",),
    "elixir": (".ex", ".exs"),
    "dart": (".dart",),
}.items():
    for _extension in _extensions:
        _FAMILY[_extension] = _family

# Test file name -> the name of what it tests (group "subject").
_TEST_NAMES = [
    re.compile(r"^test_(?P<subject>.+)\.(?:py|pyx)$"),
    re.compile(r"^(?P<subject>.+)_tests?\.(?:py|go|rb|exs|dart|c|cc|cpp|cxx)$"),
    re.compile(r"^(?P<subject>.+)_(?:unittest|spec|integration_test)\.(?:cc|cpp|cxx|rb)$"),
    re.compile(
        r"^(?P<subject>.+?)\.(?:test|spec|e2e|e2e-spec|integration|unit)\."
        r"(?:js|jsx|ts|tsx|mjs|cjs|mts|cts|vue|svelte)$"
    ),
    re.compile(
        r"^(?P<subject>[A-Z][\w$]*?)(?:Tests?|IT|ITCase|IntegrationTest|Spec|Suite)\.(?:java|kt|scala|groovy)$"
    ),
    re.compile(r"^Test(?P<subject>[A-Z][\w$]*)\.(?:java|kt|scala|groovy)$"),
    re.compile(r"^(?P<subject>.+?)(?:Tests?|Specs?)\.(?:cs|fs|vb|php|swift)$"),
    re.compile(r"^test_(?P<subject>.+)\.(?:c|cc|cpp|cxx|rb|php)$"),
]
# Named like a test only inside a test folder: rack's test/spec_request.rb is a
# test, Bundler's lib/bundler/spec_set.rb is not (nor RSpec's spec_helper.rb).
_TEST_FOLDER_NAMES = {"ruby": re.compile(r"^spec_(?P<subject>(?!helper\.rb$).+)\.rb$")}
# Source names that stand for their folder: pkg/__init__.py, json/index.ts, parser/mod.rs.
_FOLDER_STEMS = {"__init__", "index", "mod", "lib", "main", "init", "__main__"}
# Ecosystems whose tests may be named exactly like their source when they sit
# in a test folder (Rust's tests/parser.rs, mocha's test/parser.js, __tests__/x.ts).
_SAME_NAME_FAMILIES = {"rust", "js"}
# Folders that say where code lives, not what it is: ignored when comparing a
# source's folders with a test's (src/main/java/com/x <-> src/test/java/com/x).
_LAYOUT_DIRS = frozenset(
    """
    src lib source sources main java kotlin scala groovy app internal
    """.split()
)


def file_role(path: str, text: str | None = None) -> str:
    """The role of the file at `path` (posix, relative to the project root).

    Args:
        path: e.g. ``src/flask/app.py``.
        text: the file's text, if the caller has it: its first lines are
            checked for a "generated, do not edit" marker.

    Returns one of :data:`ROLES`. The rules are in the module docstring.
    """
    parts = path.split("/")
    name = parts[-1]
    folded = name.lower()
    dirs = [d.lower() for d in parts[:-1]]
    stem, extension = _split_extension(folded)

    if any(d in _VENDORED_DIRS for d in dirs):
        return "vendored"
    if _is_generated(dirs, folded) or (text is not None and _has_generated_marker(text)):
        return "generated"
    if _is_changelog(dirs, stem, extension):
        return "changelog"
    if _is_community(dirs, stem, folded):
        return "community"
    folder_role = _folder_role(parts[:-1])
    named_test = folded == "conftest.py" or _test_subject(name) is not None
    if folder_role == "docs" and named_test:  # a package named doc/ has its own tests (Go's doc/x_test.go)
        return "test"
    if folder_role is not None:
        return folder_role
    if named_test:
        return "test"
    if _is_config(dirs, folded) or extension in _DATA_EXTENSIONS:
        return "config"
    if extension in _DOC_EXTENSIONS:
        return "docs"
    return "source"


def _split_extension(name: str) -> tuple[str, str]:
    dot = name.rfind(".")
    if dot <= 0:
        return name, ""
    return name[:dot], name[dot:]


def _is_generated(dirs: list[str], folded: str) -> bool:
    if folded in _LOCK_FILES or _GENERATED_NAME.search(folded):
        return True
    if any(d in _GENERATED_ANYWHERE for d in dirs):
        return True
    if dirs and _is_output_folder(dirs[0]):
        return True
    # packages/<name>/dist/...
    return len(dirs) >= 3 and dirs[0] in _MONOREPO_DIRS and _is_output_folder(dirs[2])


def _is_output_folder(name: str) -> bool:
    return name in _GENERATED_AT_TOP or bool(_QUALIFIED_OUTPUT.fullmatch(name))


def _has_generated_marker(text: str) -> bool:
    lines = text[:4000].splitlines()
    return bool(_GENERATED_MARKER.search("\n".join(lines[:5])) or _TOOL_BANNER.search("\n".join(lines[:15])))


def _is_changelog(dirs: list[str], stem: str, extension: str) -> bool:
    if extension not in _TEXT_EXTENSIONS and extension not in (".yaml", ".yml"):
        return False
    base = stem.split(".", maxsplit=1)[0]  # CHANGES.rst, HISTORY.md, NEWS.txt, changes.0.9.md
    if base in _CHANGELOG_STEMS and extension in _TEXT_EXTENSIONS:
        return True
    # fragments: changes/1234.bugfix.md, changelog.d/x.rst, releasenotes/notes/x.yaml,
    # docs/releases/4.2.txt
    return any(d in _CHANGELOG_DIRS for d in dirs)


def _is_community(dirs: list[str], stem: str, folded: str) -> bool:
    base = stem.split(".", maxsplit=1)[0].replace(" ", "_")
    extension = _split_extension(folded)[1]
    if base in _COMMUNITY_STEMS and extension in _TEXT_EXTENSIONS | {".yml", ".yaml"}:
        return True
    if _LICENSE_NAME.match(folded):  # LICENSE-MIT, LICENSE.APACHE, COPYING.LESSER
        return True
    if (
        base in ("issue_template", "pull_request_template", "security_policy")
        and extension in _TEXT_EXTENSIONS
    ):
        return True  # also outside .github/ (ripgrep's ISSUE_TEMPLATE.md, rack's SECURITY_POLICY.md)
    if dirs and dirs[0] == ".github":
        return any(
            folded.startswith(prefix)
            for prefix in ("issue_template", "pull_request_template", "discussion_template")
        ) or any(d in ("issue_template", "pull_request_template", "discussion_template") for d in dirs)
    return False


def _folder_role(folders: list[str]) -> str | None:
    """The role of the outermost test, docs or example folder on the path, if any."""
    for folder in folders:
        lowered = folder.lower()
        if _is_test_dir(folder):
            return "test"
        if lowered in _DOC_DIRS:
            return "docs"
        if lowered in _EXAMPLE_DIRS:
            return "example"
    return None


def _is_config(dirs: list[str], folded: str) -> bool:
    if folded in _CONFIG_FILES or _CONFIG_NAME.match(folded):
        return True
    if "requirements" in dirs and folded.endswith((".txt", ".in")):  # requirements/dev.txt
        return True
    if dirs and (dirs[0] in _CI_DIRS or dirs[0] in _EDITOR_DIRS):
        return True
    # dotfiles (.gitignore, .editorconfig, .travis.yml, .pre-commit-config.yaml, .env.example)
    return folded.startswith(".")


def _test_subject(name: str) -> str | None:
    """What a test file's name says it tests: ``test_app.py`` -> ``app``; None if not a test name."""
    for pattern in _TEST_NAMES:
        match = pattern.match(name)
        if match:
            return match.group("subject")
    return None


# -- the tests of a source file ---------------------------------------------------------


class SourceTestIndex:
    """The test files of a project, indexed for "which tests belong to this source file".

    Build it once from all the project's paths; :meth:`tests_for` is then a
    dictionary lookup and a short ranking.
    """

    def __init__(self, paths: Iterable[str]):
        self._by_subject: dict[tuple[str, str], list[str]] = defaultdict(list)
        for path in paths:
            if file_role(path) != "test":
                continue
            family = _FAMILY.get(_split_extension(path.lower())[1])
            if family is None:
                continue
            for subject in _test_subjects(path, family):
                self._by_subject[(family, subject)].append(path)

    def tests_for(self, source_path: str) -> list[str]:
        """The tests of `source_path` by naming convention, closest first.

        A test matches when its name says it tests the source (``test_x.py``,
        ``x_test.go``, ``x.spec.ts``, ``XTest.java``, ...; or a file of the
        same name in a test folder, like Rust's ``tests/x.rs``), it is of the
        same ecosystem, and, among several candidates, its folders mirror the
        source's best (``src/main/java/a/X.java`` <-> ``src/test/java/a/XTest.java``;
        ``pkg/x.go`` <-> ``pkg/x_test.go``; ``packages/core/src/x.ts`` <->
        ``packages/core/test/x.test.ts`` rather than ``packages/web/...``).
        """
        family = _FAMILY.get(_split_extension(source_path.lower())[1])
        if family is None:
            return []
        parts = source_path.split("/")
        stem = _split_extension(parts[-1])[0]
        subjects = [stem]
        if len(parts) > 1:
            parent = parts[-2]
            if stem.lower() in _FOLDER_STEMS:
                subjects.append(parent)  # json/__init__.py <-> test_json.py, parser/mod.rs
            else:
                subjects.append(f"{parent}_{stem}")  # flask/json/tag.py <-> test_json_tag.py
        found: dict[str, int] = {}
        source_dirs = _meaningful_dirs(parts[:-1])
        for rank, subject in enumerate(subjects):
            for test in self._by_subject.get((family, subject.lower()), ()):
                if test == source_path:
                    continue
                if family == "go" and test.split("/")[:-1] != parts[:-1]:
                    continue  # a Go package's tests are in its folder: render/json.go is not binding/json_test.go's
                if not source_path.startswith(_package_of(test)):
                    continue  # crates/matcher/tests/util.rs tests crates/matcher, not crates/regex/src/util.rs
                score = _closeness(source_dirs, parts[:-1], test) * 2 - rank
                found[test] = max(found.get(test, score), score)
        if not found:
            return []
        best = max(found.values())
        # Unrelated copies elsewhere in a monorepo (another package's test_utils.py)
        # are left out once a test that mirrors the source's folders exists.
        keep = [t for t, s in found.items() if s >= best - 1 or best <= 0]
        return sorted(keep, key=lambda t: (-found[t], t))


def _package_of(test: str) -> str:
    """The folder a test's test folder sits in, with a slash (``crates/matcher/``
    for ``crates/matcher/tests/util.rs``); "" for a test folder at the root or
    a test beside its source (``pkg/x_test.go``): then any source may be its."""
    parts = test.split("/")[:-1]
    for i, folder in enumerate(parts):
        if _is_test_dir(folder):
            return "/".join(parts[:i]) + "/" if i else ""
    return ""


def _is_test_dir(folder: str) -> bool:
    """A folder of tests: ``tests/``, ``spec/``, ``__tests__/``, ``Foo.Tests/``..."""
    return folder.lower() in _TEST_DIRS or bool(
        _TEST_DIR_NAME.search(folder) or _TEST_DIR_CAMEL.search(folder)
    )


def tests_for(source_path: str, all_paths: Iterable[str]) -> list[str]:
    """The test files in `all_paths` that belong to `source_path`, closest first.

    For one lookup; to look up many sources, build a :class:`SourceTestIndex`
    once. See :meth:`SourceTestIndex.tests_for` for the rules.
    """
    return SourceTestIndex(all_paths).tests_for(source_path)


def _test_subjects(path: str, family: str) -> list[str]:
    """Lower-cased names of what the test at `path` tests."""
    name = path.rsplit("/", 1)[-1]
    subject = _test_subject(name)
    if subject is None and family in _TEST_FOLDER_NAMES:
        match = _TEST_FOLDER_NAMES[family].match(name)
        subject = match.group("subject") if match else None
    subjects = [subject] if subject else []
    stem = _split_extension(name)[0]
    if subject is None and family in _SAME_NAME_FAMILIES and stem.lower() not in _FOLDER_STEMS:
        # tests/parser.rs, __tests__/parser.ts, test/parser.js: named like the source
        subjects.append(stem)
    return [s.lower() for s in subjects if s.lower() not in ("", "conftest")]


def _meaningful_dirs(folders: list[str]) -> list[str]:
    return [f.lower() for f in folders if f.lower() not in _LAYOUT_DIRS and f.lower() not in _TEST_DIRS]


def _closeness(source_dirs: list[str], source_folders: list[str], test: str) -> int:
    """How well a test's folders mirror the source's: same folder best, then
    the length of the common prefix of their folders once layout and test
    folders (src, main, tests, __tests__...) are set aside."""
    test_folders = test.split("/")[:-1]
    if test_folders == source_folders:
        return 100
    test_dirs = _meaningful_dirs(test_folders)
    common = 0
    for a, b in zip(source_dirs, test_dirs):
        if a != b:
            break
        common += 1
    if test_dirs == source_dirs:
        return 50 + common
    if common == 0 and test_dirs and source_dirs:
        # tests/unit/test_x.py for src/pkg/x.py: no shared folder, but the test
        # tree need not repeat the package name
        common = 1 if set(test_dirs) & set(source_dirs) else 0
    return common
