import { describe, expect, it } from '@jest/globals';
import { parseTableMap } from './binlog-events.js';
import { columnOfMap, describeMap } from './table-map-metadata.js';

// Table maps with their optional metadata as real servers wrote them,
// recorded by go-mysql (replication/row_event_test.go, MIT:
// TestTableMapHelperMaps, TestTableMapOptMetaPrimaryKey): MySQL 8.0 and
// MariaDB 10.5, binlog_row_metadata=FULL, a table of every column type
// (`c_char` in gbk, ENUM/SET in utf8mb4 and gbk, every geometry type), and
// two primary keys, one with a prefix. The expectations are the recording's.

const hex = (parts: string[]) => Buffer.from(parts.join(''), 'hex');

/** `_types` of MySQL 8.0 (JSON is MySQL's own type, 245). */
const MYSQL8_TYPES = hex([
  '6500000000000100047465737400065f7479706573003310010102090308f604050102090308f604050d0a1313121211',
  '11fe0ffe0ffcfcfcfcfcfcfcfcfefefff5fefeffffffffffffff310008411e0408411e0408000600060006eefefc03fe',
  '4040000102030401020304f701f8010404f801f701040404040404040000fcc3ffff070103007f80030c1ce03f3f3f3f',
  '3f3fe0e0e0e00708000706050403020104fc050205625f626974096e5f626f6f6c65616e096e5f74696e79696e740a6e',
  '5f736d616c6c696e740b6e5f6d656469756d696e74056e5f696e74086e5f626967696e74096e5f646563696d616c076e',
  '5f666c6f6174086e5f646f75626c650a6e755f74696e79696e740b6e755f736d616c6c696e740c6e755f6d656469756d',
  '696e74066e755f696e74096e755f626967696e740a6e755f646563696d616c086e755f666c6f6174096e755f646f7562',
  '6c6506745f7965617206745f6461746506745f74696d6507745f6674696d650a745f6461746574696d650b745f666461',
  '746574696d650b745f74696d657374616d700c745f6674696d657374616d7006635f6368617209635f76617263686172',
  '08635f62696e6172790b635f76617262696e6172790a635f74696e79626c6f6206635f626c6f620c635f6d656469756d',
  '626c6f620a635f6c6f6e67626c6f620a635f74696e797465787406635f746578740c635f6d656469756d746578740a63',
  '5f6c6f6e677465787406655f656e756d05735f7365740a675f67656f6d65747279066a5f6a736f6e06735f7365743207',
  '655f656e756d3214675f67656f6d65747279636f6c6c656374696f6e0e675f6d756c7469706f6c79676f6e11675f6d75',
  '6c74696c696e65737472696e670c675f6d756c7469706f696e7409675f706f6c79676f6e0c675f6c696e65737472696e',
  '6707675f706f696e740b04e0e01c1c050a02013101320201330134060a02016101620201630164',
]);
/** The same table on MariaDB 10.5 (JSON is LONGTEXT; GEOMETRY counts among the text columns' collations). */
const MARIADB105_TYPES = hex([
  '1e00000000000100047465737400065f7479706573003310010102090308f604050102090308f604050d0a1313121211',
  '11fe0ffe0ffcfcfcfcfcfcfcfcfefefffcfefeffffffffffffff310008411e0408411e0408000600060006eefefc03fe',
  '4040000102030401020304f701f8010404f801f701040404040404040000fcc0ffff070103007fc0020f3f001c01e008',
  'e009e00ae00be00d2e0708000706050403020104fc050205625f626974096e5f626f6f6c65616e096e5f74696e79696e',
  '740a6e5f736d616c6c696e740b6e5f6d656469756d696e74056e5f696e74086e5f626967696e74096e5f646563696d61',
  '6c076e5f666c6f6174086e5f646f75626c650a6e755f74696e79696e740b6e755f736d616c6c696e740c6e755f6d6564',
  '69756d696e74066e755f696e74096e755f626967696e740a6e755f646563696d616c086e755f666c6f6174096e755f64',
  '6f75626c6506745f7965617206745f6461746506745f74696d6507745f6674696d650a745f6461746574696d650b745f',
  '666461746574696d650b745f74696d657374616d700c745f6674696d657374616d7006635f6368617209635f76617263',
  '68617208635f62696e6172790b635f76617262696e6172790a635f74696e79626c6f6206635f626c6f620c635f6d6564',
  '69756d626c6f620a635f6c6f6e67626c6f620a635f74696e797465787406635f746578740c635f6d656469756d746578',
  '740a635f6c6f6e677465787406655f656e756d05735f7365740a675f67656f6d65747279066a5f6a736f6e06735f7365',
  '743207655f656e756d3214675f67656f6d65747279636f6c6c656374696f6e0e675f6d756c7469706f6c79676f6e1167',
  '5f6d756c74696c696e65737472696e670c675f6d756c7469706f696e7409675f706f6c79676f6e0c675f6c696e657374',
  '72696e6707675f706f696e740b04e0e01c1c050a02013101320201330134060a02016101620201630164',
]);
/** `create table _prim (id2 int, col varchar(30), id1 bigint, primary key (id1, id2))`, MySQL 8.0. */
const MYSQL8_PRIM = hex([
  '6c00000000000100047465737400055f7072696d0003030f08027800020101000201e0040c0369643203636f6c036964',
  '3108020200',
]);
/** `create table _prim2 (col1 int, id1 char(10), col2 int, id2 varchar(20), primary key (id1, id2(10)))`, MySQL 8.0. */
const MYSQL8_PRIM2 = hex([
  '6d00000000000100047465737400065f7072696d32000403fe030f04fe285000050101000201e0041204636f6c310369',
  '643104636f6c320369643209040100030a',
]);

const NAMES = [
  'b_bit',
  'n_boolean',
  'n_tinyint',
  'n_smallint',
  'n_mediumint',
  'n_int',
  'n_bigint',
  'n_decimal',
  'n_float',
  'n_double',
  'nu_tinyint',
  'nu_smallint',
  'nu_mediumint',
  'nu_int',
  'nu_bigint',
  'nu_decimal',
  'nu_float',
  'nu_double',
  't_year',
  't_date',
  't_time',
  't_ftime',
  't_datetime',
  't_fdatetime',
  't_timestamp',
  't_ftimestamp',
  'c_char',
  'c_varchar',
  'c_binary',
  'c_varbinary',
  'c_tinyblob',
  'c_blob',
  'c_mediumblob',
  'c_longblob',
  'c_tinytext',
  'c_text',
  'c_mediumtext',
  'c_longtext',
  'e_enum',
  's_set',
  'g_geometry',
  'j_json',
  's_set2',
  'e_enum2',
  'g_geometrycollection',
  'g_multipolygon',
  'g_multilinestring',
  'g_multipoint',
  'g_polygon',
  'g_linestring',
  'g_point',
];

/** Per column from a sparse map of index → value (the recording's form). */
const perColumn = <T>(sparse: Record<number, T>): (T | undefined)[] => NAMES.map((_, i) => sparse[i]);

const UNSIGNED = perColumn<boolean>({
  ...Object.fromEntries(Array.from({ length: 9 }, (_, k) => [k + 1, false])),
  ...Object.fromEntries(Array.from({ length: 8 }, (_, k) => [k + 10, true])),
});
// Collation ids: 28 gbk_chinese_ci, 46 utf8mb4_bin, 63 binary, 224 utf8mb4_unicode_ci.
const TEXT_COLLATIONS = {
  26: 28,
  27: 224,
  28: 63,
  29: 63,
  30: 63,
  31: 63,
  32: 63,
  33: 63,
  34: 224,
  35: 224,
  36: 224,
  37: 224,
};
const ENUM_SET_COLLATIONS = { 38: 224, 39: 224, 42: 28, 43: 28 };
const MEMBERS = perColumn({ 38: ['a', 'b'], 39: ['1', '2'], 42: ['3', '4'], 43: ['c', 'd'] });
const CHARSETS = new Map([
  [28, 'gbk'],
  [46, 'utf8mb4'],
  [224, 'utf8mb4'],
]);

describe('table maps with full metadata recorded from MySQL 8.0 and MariaDB 10.5', () => {
  it.each([
    ['MySQL 8.0', 'MySQL' as const, MYSQL8_TYPES, TEXT_COLLATIONS],
    // MariaDB also gives its GEOMETRY columns (binary) and its JSON, a utf8mb4_bin LONGTEXT, a collation.
    [
      'MariaDB 10.5',
      'MariaDB' as const,
      MARIADB105_TYPES,
      { ...TEXT_COLLATIONS, 40: 63, 41: 46, 44: 63, 45: 63, 46: 63, 47: 63, 48: 63, 49: 63, 50: 63 },
    ],
  ])('%s: names, signedness, collations and members as the server wrote them', (_, engine, bytes, text) => {
    const map = parseTableMap(bytes);
    const d = describeMap(map, engine);
    expect(d?.names).toEqual(NAMES);
    expect(d?.unsigned).toEqual(UNSIGNED);
    expect(d?.collations).toEqual(perColumn<number>({ ...text, ...ENUM_SET_COLLATIONS }));
    expect(d?.members.map((m) => m?.map((b) => b.toString('utf8')))).toEqual(MEMBERS);
    expect(d?.primaryKey).toEqual([]);
  });

  it('describes the columns by the map alone as the catalog would', () => {
    const mysql = parseTableMap(MYSQL8_TYPES);
    const d = describeMap(mysql, 'MySQL')!;
    const col = (i: number) => columnOfMap(mysql, d, i, CHARSETS);
    expect(col(14)).toMatchObject({ name: 'nu_bigint', dataType: 'bigint', unsigned: true });
    expect(col(26)).toMatchObject({ name: 'c_char', dataType: 'char', charset: 'gbk' });
    expect(col(28)).toMatchObject({ name: 'c_binary', dataType: 'binary', charset: null, binaryLength: 64 });
    expect(col(35)).toMatchObject({ name: 'c_text', dataType: 'text', charset: 'utf8mb4' });
    expect(col(41)).toMatchObject({ name: 'j_json', dataType: 'json', json: true });
    expect(col(42)).toMatchObject({ name: 's_set2', dataType: 'set', charset: 'gbk', members: ['3', '4'] });
    expect(col(50)).toMatchObject({ name: 'g_point', dataType: 'geometry', charset: null });
    // MariaDB's JSON by the map alone is its LONGTEXT: text, not parsed (the catalog's CHECK says JSON).
    const mariadb = parseTableMap(MARIADB105_TYPES);
    const m = describeMap(mariadb, 'MariaDB')!;
    expect(columnOfMap(mariadb, m, 41, CHARSETS)).toMatchObject({
      name: 'j_json',
      dataType: 'text',
      json: false,
    });
    expect(columnOfMap(mariadb, m, 40, CHARSETS)).toMatchObject({
      name: 'g_geometry',
      dataType: 'geometry',
      charset: null,
    });
  });

  it('reads the primary key, with and without a prefix', () => {
    expect(describeMap(parseTableMap(MYSQL8_PRIM), 'MySQL')?.primaryKey).toEqual([2, 0]);
    expect(describeMap(parseTableMap(MYSQL8_PRIM2), 'MySQL')?.primaryKey).toEqual([1, 3]);
  });
});
