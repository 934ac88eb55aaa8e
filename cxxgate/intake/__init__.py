"""From a patch to a tree: the patch's text as git reads it (patchtext), diagnostic pragmas in
source (pragmas), base trees from git (repo), path guard and tree materialisation (tree)."""
