# Text input of flakeid accepts exactly what bigint accepts with a
# non-negative value, and gives that value; everything else is an error
# with SQLSTATE 22P02 (bad text) or 22003 (out of range), never a wrong
# value or a crash.  Binary COPY out and back in gives identical rows, and
# binary input refuses negative values.

use strict;
use warnings;

use Encode qw(encode);
use FlakeFault;
use FlakeTest;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = flake_node('input', quiet => 1,
	node_id => 14,
	initdb  => [ '--encoding=UTF8', '--locale=C.UTF-8' ]);
$node->start;
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION flakeid;

-- What bigint and flakeid each make of a text: 'ok' and the value, or the
-- SQLSTATE of the error.
CREATE FUNCTION try_in(t text,
	OUT big_state text, OUT big_val bigint,
	OUT flake_state text, OUT flake_val bigint)
LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		big_val := t::bigint;
		big_state := 'ok';
	EXCEPTION WHEN OTHERS THEN
		big_state := SQLSTATE;
	END;
	BEGIN
		flake_val := t::flakeid::bigint;
		flake_state := 'ok';
	EXCEPTION WHEN OTHERS THEN
		flake_state := SQLSTATE;
	END;
END $$;

-- Why flakeid's verdict on a text is wrong, or NULL when it is right:
-- accepted iff bigint accepts it with a value >= 0, with the same value;
-- otherwise 22P02 where bigint says 22P02, 22003 where bigint says 22003
-- or gives a negative value.
CREATE FUNCTION verdict_error(r record) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	IF r.big_state = 'ok' AND r.big_val >= 0 THEN
		IF r.flake_state <> 'ok' THEN
			RETURN 'flakeid refused it with ' || r.flake_state || ', bigint gives ' || r.big_val;
		ELSIF r.flake_val <> r.big_val THEN
			RETURN 'flakeid gives ' || r.flake_val || ', bigint ' || r.big_val;
		END IF;
		RETURN NULL;
	END IF;
	IF r.flake_state = 'ok' THEN
		RETURN 'flakeid accepted it as ' || r.flake_val || ', bigint says '
			|| coalesce(r.big_val::text, r.big_state);
	END IF;
	IF r.flake_state <> (CASE WHEN r.big_state = 'ok' THEN '22003' ELSE r.big_state END) THEN
		RETURN 'flakeid fails with ' || r.flake_state || ', bigint with '
			|| coalesce(r.big_val::text, r.big_state);
	END IF;
	RETURN NULL;
END $$;

CREATE TABLE cases (i serial, kind text, label text, t text);
});

# A text as an SQL expression, whatever bytes it holds.
sub sql_text
{
	my ($text) = @_;
	my $hex = unpack 'H*', encode('UTF-8', $text);
	return "convert_from('\\x$hex'::bytea, 'UTF8')";
}

# [label, text] or [label, undef, SQL expression]: each must be refused.
my @bad = (
	[ 'empty', '' ],
	[ 'one space', ' ' ],
	[ 'white space only', " \t\n\x0b\f\r" ],
	[ 'minus one', '-1' ],
	[ 'bigint minimum', '-9223372036854775808' ],
	[ 'minus with spaces', ' -42 ' ],
	[ '2^63', '9223372036854775808' ],
	[ '2^64 - 1', '18446744073709551615' ],
	[ '2^63 with leading zeros', '0009223372036854775808' ],
	[ '23 nines', '99999999999999999999999' ],
	[ 'plus alone', '+' ],
	[ 'minus alone', '-' ],
	[ 'two signs', '+-1' ],
	[ 'double minus', '--1' ],
	[ 'trailing sign', '1-' ],
	[ 'space after sign', '- 1' ],
	[ 'space after plus', '+ 1' ],
	[ 'inner space', '1 2' ],
	[ 'two numbers', '9223372036854775807 0' ],
	[ 'thousands comma', '1,000' ],
	[ 'exponent', '1e3' ],
	[ 'decimal', '1.0' ],
	[ 'trailing point', '1.' ],
	[ 'leading point', '.5' ],
	[ 'letters', 'abc' ],
	[ 'digits then letters', '12abc' ],
	[ 'NaN', 'NaN' ],
	[ 'Infinity', 'Infinity' ],
	[ 'null word', 'null' ],
	[ 'parentheses', '(1)' ],
	[ 'quoted', "'1'" ],
	[ 'fraction', '1/2' ],
	[ 'no-break space before', "\x{00A0}12" ],
	[ 'no-break space after', "12\x{00A0}" ],
	[ 'em space before', "\x{2003}12" ],
	[ 'em space after', "12\x{2003}" ],
	[ 'ideographic space', "\x{3000}12" ],
	[ 'next line U+0085', "12\x{0085}" ],
	[ 'zero-width space', "\x{200B}1" ],
	[ 'byte order mark', "\x{FEFF}12" ],
	[ 'minus sign U+2212', "\x{2212}1" ],
	[ 'Arabic-Indic digits', "\x{0661}\x{0662}\x{0663}" ],
	[ 'fullwidth digits', "\x{FF11}\x{FF12}\x{FF13}" ],
	[ 'Devanagari digits', "\x{0967}\x{0968}\x{0969}" ],
	[ 'fullwidth digit after ASCII', "1\x{FF12}" ],
	[ 'superscript two', "\x{00B2}" ],
	[ 'control character', "12\x{01}" ],
	[ 'escape character', "\x{1B}12" ],
	[ 'delete character', "12\x{7F}" ],
	[ 'megabyte of digits', undef, "repeat('9', 1048576)" ],
	[ 'megabyte of ones then junk', undef, "repeat('1', 1048576) || 'x'" ],
	[ 'digit, a kilobyte of spaces, junk', undef, "'1' || repeat(' ', 1024) || 'x'" ],
	[ 'megabyte of junk', undef, "repeat('a', 1048576)" ],
	[ 'megabyte of spaces', undef, "repeat(' ', 1048576)" ],
);

# Texts bigint accepts with a non-negative value: flakeid takes them too.
my @good = (
	[ 'zero', '0' ],
	[ 'zeros', '00000' ],
	[ 'minus zero', '-0' ],
	[ 'plus zero', '+0' ],
	[ 'plus', '+42' ],
	[ 'spaces around', '  42  ' ],
	[ 'tab and newline', "\t42\n" ],
	[ 'vertical tab', "\x0b42\x0b" ],
	[ 'form feed and carriage return', "\f7\r" ],
	[ 'all six white spaces', " \t\n\x0b\f\r1 \t\n\x0b\f\r" ],
	[ 'bigint maximum', '9223372036854775807' ],
	[ 'maximum with plus', '+9223372036854775807' ],
	[ 'maximum with leading zeros', '0009223372036854775807' ],
	[ 'a flakeid', '912138097326583811' ],
	[ 'megabyte of zeros then 5', undef, "repeat('0', 1048576) || '5'" ],
);

# PostgreSQL 16 and later read bigint in hex, octal and binary and with
# underscores between digits, so flakeid takes these there and not before.
my @non_decimal = (
	[ 'hex', '0x1F' ],
	[ 'binary', '0b101' ],
	[ 'octal', '0o17' ],
	[ 'underscores', '1_000' ],
);
push @{ $node->pg_version >= 16 ? \@good : \@bad }, @non_decimal;

$node->safe_psql('postgres',
	'INSERT INTO cases (kind, label, t) VALUES '
	  . join(
		",\n",
		map {
			my ($kind, $case) = @$_;
			my $expr = defined $case->[1] ? sql_text($case->[1]) : $case->[2];
			"('$kind', '$case->[0]', $expr)"
		} ((map { [ 'bad', $_ ] } @bad), (map { [ 'good', $_ ] } @good))));
ok(@bad >= 40, scalar(@bad) . ' bad texts');

my @results = split /\n/, $node->safe_psql(
	'postgres', q{
SELECT kind, label, r.flake_state, coalesce(verdict_error(r), '')
FROM cases, LATERAL try_in(t) r ORDER BY i});
is(scalar(@results), @bad + @good, 'every text was tried');
foreach my $line (@results)
{
	my ($kind, $label, $state, $error) = split /\|/, $line, -1;
	if ($kind eq 'bad')
	{
		like($state, qr/^(22P02|22003)$/, "bad text \"$label\": refused with $state");
	}
	else
	{
		is($state, 'ok', "text \"$label\": accepted as bigint accepts it");
	}
	is($error, '', "text \"$label\": flakeid agrees with bigint");
}

# The SQLSTATE and message through a literal, as a client sees them.
my ($ret, $out, $err, $state) =
  psql_state($node, q{SELECT '18446744073709551616'::flakeid});
is($state, '22003', 'an overflowing literal fails with 22003');
like($err, qr/out of range for type flakeid/, 'the message names flakeid');
($ret, $out, $err, $state) = psql_state($node, q{SELECT ' 1,000 '::flakeid});
is($state, '22P02', 'a literal with a comma fails with 22P02');
like($err, qr/invalid input syntax for type flakeid: " 1,000 "/,
	'the message quotes the text');
($ret, $out, $err, $state) = psql_state($node, q{SELECT '-1'::flakeid});
is($state, '22003', 'a negative literal fails with 22003');

# Random texts from a small alphabet: digits, signs, white space, letters.
srand(20240614);
my @alphabet = (
	('0' .. '9') x 6,
	('+', '-') x 2,
	(' ') x 3, "\t", "\n", "\x0b", "\f", "\r",
	'a', 'e', 'x', 'E', '_', '.', ',', "\x{00A0}", "\x{0661}");
my @random;
foreach my $i (1 .. 30000)
{
	my $text;
	my $shape = rand();
	if ($shape < 0.4)
	{
		# a number near the limits: 17 to 21 digits, maybe signed, padded
		$text = ('', '+', '-', ' ', ' -')[ int(rand(5)) ];
		$text .= ('9', '1', '0')[ int(rand(3)) ]
		  . join('', map { int(rand(10)) } 1 .. 16 + int(rand(5)));
		$text .= (' ', '', "\t", '')[ int(rand(4)) ];
	}
	elsif ($shape < 0.5)
	{
		# around 2^63
		$text = 9223372036854775800 + int(rand(8));
		$text = (9223372036854775800 + int(rand(8)) - 8) if rand() < 0.3;
		$text =~ s/(\d\d)$/sprintf('%02d', $1 + int(rand(16)))/e;
		$text = '-' . $text if rand() < 0.3;
	}
	else
	{
		$text = join('',
			map { $alphabet[ int(rand(@alphabet)) ] } 1 .. int(rand(12)));
	}
	# now and then mutate one character
	substr($text, int(rand(length($text))), 1) =
	  $alphabet[ int(rand(@alphabet)) ]
	  if length($text) && rand() < 0.2;
	push @random, $text;
}
$node->safe_psql(
	'postgres',
	"CREATE TABLE random_texts AS SELECT convert_from(decode(h, 'hex'), 'UTF8') AS t "
	  . "FROM unnest(ARRAY["
	  . join(',', map { "'" . unpack('H*', encode('UTF-8', $_)) . "'" } @random)
	  . "]::text[]) h");
my $log_offset = -s $node->logfile;
my ($tried, $accepted, $wrong, $example) = split /\|/,
  $node->safe_psql(
	'postgres', q{
SELECT count(*), count(*) FILTER (WHERE r.flake_state = 'ok'),
	count(*) FILTER (WHERE verdict_error(r) IS NOT NULL),
	min(quote_literal(t) || ': ' || verdict_error(r))
FROM random_texts, LATERAL try_in(t) r}), -1;
is($tried, 30000, '30000 random texts tried');
is($wrong, 0, 'flakeid agrees with bigint on every random text')
  or diag("for instance $example");
ok($accepted > 1000 && $accepted < 29000,
	"the random texts mix accepted ($accepted) and refused ones");
is($node->safe_psql('postgres', 'SELECT 1'), 1, 'the server is still up');
ok(!$node->log_contains(qr/terminated by signal|was terminated/, $log_offset),
	'no server process crashed');

# Binary COPY out and back in gives identical rows.
my $file = $node->basedir . '/flakeid.copy';
my $neg_file = $node->basedir . '/negative.copy';
$node->safe_psql(
	'postgres', qq{
CREATE TABLE bin (id flakeid, b bigint, note text);
INSERT INTO bin SELECT nextflake(), g, 'row ' || g FROM generate_series(1, 10000) g;
INSERT INTO bin VALUES (0, -1, 'zero'), (9223372036854775807, -2, 'max'),
	(NULL, -3, 'null'), (1, -4, 'one');
COPY bin TO '$file' (FORMAT binary);
CREATE TABLE bin2 (LIKE bin);
COPY bin2 FROM '$file' (FORMAT binary);
});
is( $node->safe_psql(
		'postgres', q{
SELECT (SELECT count(*) FROM bin2) || ' '
	|| (SELECT count(*) FROM (TABLE bin EXCEPT ALL TABLE bin2) a) || ' '
	|| (SELECT count(*) FROM (TABLE bin2 EXCEPT ALL TABLE bin) b)}),
	'10004 0 0',
	'binary COPY out and back in gives identical rows');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM bin b1 JOIN bin2 b2 ON b1.b = b2.b
WHERE b1.id IS DISTINCT FROM b2.id}),
	0,
	'each row kept its ID');

# The binary form of a negative bigint is refused by flakeid.
($ret, $out, $err, $state) = psql_state(
	$node, qq{
CREATE TABLE neg (id bigint);
INSERT INTO neg VALUES (5), (-5);
COPY neg TO '$neg_file' (FORMAT binary);
CREATE TABLE negf (id flakeid);
COPY negf FROM '$neg_file' (FORMAT binary);
});
is($state, '22003', 'binary COPY of a negative value into flakeid fails with 22003');
is($node->safe_psql('postgres', 'SELECT count(*) FROM negf'),
	0, 'and stores nothing');

# Text COPY uses the same input function.
($ret, $out, $err, $state) = psql_state($node,
	"CREATE TABLE textf (id flakeid);\nCOPY textf FROM stdin;\n1\n12abc\n\\.\n");
is($state, '22P02', 'text COPY of a bad value fails with 22P02');

$node->stop;
done_testing();
