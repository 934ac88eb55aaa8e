"""The cmake cells of a repository case (cxxgate/cells/cmake.py), as the gates plan them: the
`tests` gate's build of each tree (with the hidden test patch, seeded from the reference
tree's build), and the configure-only cell whose compile database gives the probe gates
(headers, symbols) the project's own include folders and defines
(cxxgate/toolchain/projectflags.py)."""

from __future__ import annotations

from dataclasses import replace

from cxxgate.cells import cmake, testfolders
from cxxgate.contract.gate import Context
from cxxgate.toolchain.cellspec import CellSpec, Unit
from cxxgate.toolchain.envelope import Envelope
from cxxgate.util.yamlfile import InputError


def build_spec(
    ctx: Context,
    tree_key: str,
    env: Envelope,
    test_patch: str | None,
    seed: str | None,
    gate: str = "tests",
    own: testfolders.Asked | None = None,
) -> CellSpec:
    """The `cmake` cell of one tree: the case's build options in this envelope; built with
    the tests' `own` folders as the reference tree has them (cxxgate/cells/testfolders.py)
    when this is not the reference tree."""
    build = ctx.case.spec.build
    if build is None:
        msg = f"{ctx.case.file}: gates.{gate}: the case has no `build:` section (build: cmake)"
        raise InputError(msg)
    options = (*build.options, *cmake.case_options(build.type_for(env.name), ctx.case.spec.std))
    units: tuple[Unit, ...] = () if test_patch is None else (Unit(cmake.TEST_PATCH, test_patch),)
    if own is not None and (own.folders or own.test_dirs):
        # The reference's own build is asked too: it records the folders a candidate's takes.
        theirs = "" if tree_key == ctx.reference_tree_key else ctx.reference_tree_key
        units += (testfolders.unit(replace(own, reference=theirs)),)
    return CellSpec(
        "cmake",
        tree_key,
        units,
        (),
        (),
        env,
        ctx.case.spec.limits.build_seconds,
        label=f"cmake build ({'with test patch' if units else 'as is'})",
        needs=(seed,) if seed else (),
        extra_flags=options,
        targets=tuple(build.targets),
        data=ctx.case.data,
        # Only the case's own trees write the shared compiler cache (CellSpec.trusted).
        trusted=tree_key in {ctx.reference_tree_key, ctx.base_key},
    )


def project_build(
    ctx: Context, env: Envelope, test_patch: str | None, own: testfolders.Asked | None = None
) -> CellSpec:
    """This tree's build, seeded from the reference tree's build of the same spec."""
    ref = build_spec(ctx, ctx.reference_tree_key, env, test_patch, None, own=own)
    if ctx.tree_key == ctx.reference_tree_key:
        return ref
    return build_spec(ctx, ctx.tree_key, env, test_patch, ref.key, own=own)


def configure_spec(ctx: Context, tree_key: str, env: Envelope, gate: str) -> CellSpec | None:
    """A tree configured (no build) when the case is built with CMake; else None."""
    if ctx.case.spec.build is None:
        return None
    spec = build_spec(ctx, tree_key, env, None, None, gate)
    return CellSpec(
        "cmake",
        spec.tree_key,
        (),
        (),
        (),
        env,
        spec.compile_seconds,
        label="cmake configure",
        extra_flags=spec.extra_flags,
        targets=(cmake.CONFIGURE_ONLY,),
        data=spec.data,
    )
