#!/usr/bin/env perl
# Rewrites citations of documents outside the repository in comments:
#   CONTRACT §N          -> docs/API.md §N
#   SPEC.md "Section"    -> docs/API.md §N (the section that now holds it)
#   (issue N …)          -> dropped (src/ and the README only; tests and benchmarks keep their history)
# Only comments change: in .ts/.js/.mjs files comment lines (`*`, `/*`, `//`) and trailing ` // `
# comments, in YAML `#` comments, in Markdown every line outside fenced code. Strings (GraphQL
# descriptions, YAML values) and generated files (`generated/` folders: their generator owns them)
# are left alone. Idempotent: run it again on moved files.
#
#   perl -i scripts/cite-docs.pl $(git grep -lE 'CONTRACT|SPEC\.md|[Ii]ssue [0-9]' -- src test README.md plugins console bench/*.ts bench/lib scripts ':!scripts/cite-docs.pl')
use strict;
use warnings;
use utf8;
use open qw(:std :encoding(UTF-8));

my %SPEC = (
  'Resources and their fields' => 3, 'Custom model' => 3, 'Naming rules' => 3, 'Schema validation' => 3,
  'Endpoints' => 4, 'Authentication' => 6, 'Role' => 6, 'RoleBinding' => 6, 'Built-in roles shown' => 6,
  'Index declaration' => 7, 'Declaring objects in a plugin bundle' => 7, 'Custom APIs' => 7,
  'UI permissions' => 9,
);

my $fenced = 0;

sub sections {    # "§3, §7" from a list of numbers, sorted, without repeats
  my %seen;
  return join ', ', map { "§$_" } sort { $a <=> $b } grep { !$seen{$_}++ } @_;
}

sub rewrite {
  my ($text, $drop_issues) = @_;
  # SPEC.md "A", "B" -> docs/API.md §a, §b
  $text =~ s{SPEC\.md((?:,? "[^"]+")+)}{
    my $list = $1;
    my @n = map { $SPEC{$_} // die "unknown SPEC.md section \"$_\" in $ARGV\n" } ($list =~ /"([^"]+)"/g);
    'docs/API.md ' . sections(@n);
  }ge;
  $text =~ s{\bSPEC\.md\b}{docs/API.md}g;
  $text =~ s{\bCONTRACT (?=§)}{docs/API.md }g;
  $text =~ s{\bCONTRACT names\b}{docs/API.md names}g;
  # "docs/API.md §3, §7; docs/API.md §3, §7" -> "docs/API.md §3, §7"
  $text =~ s{docs/API\.md (§\d+(?:, §\d+)*)((?:[,;] docs/API\.md §\d+(?:, §\d+)*)+)}{
    my ($first, $rest) = ($1, $2);
    'docs/API.md ' . sections(map { /(\d+)/g } $first, $rest);
  }ge;
  if ($drop_issues) {
    $text =~ s{\((?:issue|Issue) \d+[^():]*:[ \t]?}{(}g;                # (issue 20: such …) -> (such …)
    $text =~ s{[ \t]*\((?:issue|Issue) \d+[^()]*\)}{}g;                  # … (issue 10 benchmark) -> …
    $text =~ s{(docs/API\.md §\d+(?:, §\d+)*), issue \d+[^),;]*}{$1}g;   # (docs/API.md §10, issue 22 …)
  }
  return $text;
}

while (my $line = <>) {
  my $path = $ARGV;
  if ($path =~ m{(^|/)generated/}) { print $line; next; }
  my $drop = ($path =~ m{(^|/)src/} || $path =~ m{(^|/)README\.md$}) ? 1 : 0;
  if ($path =~ /\.md$/) {
    if ($line =~ /^\s*```/) { $fenced = !$fenced; }
    elsif (!$fenced) { $line = rewrite($line, $drop); }
  } elsif ($path =~ /\.(ya?ml)$/) {
    if ($line =~ /^(\s*#)(.*)$/s) { $line = $1 . rewrite($2, $drop); }
    elsif ($line =~ /^(.*?\s)(#\s.*)$/s) { $line = $1 . rewrite($2, $drop); }
  } else {
    if ($line =~ m{^\s*(\*|/\*|//)}) { $line = rewrite($line, $drop); }
    elsif ($line =~ m{^(.*?[;,{}()\w'"`]\s+)(//\s.*)$}s) { $line = $1 . rewrite($2, $drop); }
  }
  print $line;
} continue {
  $fenced = 0 if eof;    # per file
}
