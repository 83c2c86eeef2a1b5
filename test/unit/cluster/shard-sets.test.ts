import { expect } from 'chai';
import { decodeShardSet, encodeShardSet } from '../../../src/cluster/shards.js';

describe('shard sets on the wire: a bitmap in base64url', () => {
  it('when a set is encoded and decoded, then the same shards come back, ascending, whatever their order and count', () => {
    for (const [set, shards] of [
      [[], 64],
      [[0], 64],
      [[63, 1, 2, 32], 64],
      [Array.from({ length: 64 }, (_, s) => s), 64],
      [[5, 6], 7],
      [[1023, 0, 512], 1024],
    ] as const) {
      const encoded = encodeShardSet(set, shards);
      expect(encoded).to.match(/^[A-Za-z0-9_-]*$/);
      expect(encoded.length, 'at most one character per 6 shards').to.be.at.most(Math.ceil(shards / 6));
      expect(decodeShardSet(encoded, shards)).to.deep.equal([...set].sort((a, b) => a - b));
    }
  });

  it('when 64 shards are held, then the set is 11 characters', () => {
    expect(encodeShardSet([1, 2, 3], 64)).to.have.length(11);
  });

  it('when the value is not a set of this many shards (another type, another length, not base64url), then it is refused', () => {
    const ofSixtyFour = encodeShardSet([1], 64);
    for (const wrong of [null, 7, [1, 2], 'a+b/', '***', encodeShardSet([1], 128)]) expect(decodeShardSet(wrong, 64)).to.equal(null);
    expect(decodeShardSet(ofSixtyFour, 64)).to.deep.equal([1]);
  });

  it('when a shard outside the count is given, then it is left out', () => {
    expect(decodeShardSet(encodeShardSet([2, 64, -1, 1.5], 64), 64)).to.deep.equal([2]);
  });
});
