// Compare tab (ui/tabs/compare.py): after a row of the changed list or the case finder opens a pair, the trees in view.
() => document.querySelector('#cmp-tree-a').scrollIntoView({block: 'nearest'})
