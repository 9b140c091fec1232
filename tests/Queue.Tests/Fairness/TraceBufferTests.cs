using Queue.Core.Fairness;

namespace Queue.Tests.Fairness;

/// <summary>The fairness trace's buffer: first in, first out across its chunks, with no copy of what stays.</summary>
public sealed class TraceBufferTests
{
    private static TraceEvent Event(long job) => new(DateTime.UnixEpoch.AddSeconds(job), TraceKind.Claimed, job % 7, job, 1);

    /// <summary>The jobs of the buffer's events as <see cref="TraceBuffer.CopyTo"/> writes them, after <paramref name="skip"/> slots.</summary>
    private static long[] Jobs(TraceBuffer buffer, int skip = 0)
    {
        var events = new TraceEvent[skip + buffer.Count];
        buffer.CopyTo(events, skip);
        return events.Skip(skip).Select(e => e.Job).ToArray();
    }

    [Fact]
    public void Events_come_out_oldest_first_across_chunk_boundaries_while_new_ones_go_in()
    {
        var buffer = new TraceBuffer();
        var next = 0L;
        var oldest = 0L;
        // Fill three and a half chunks, then trim and add in uneven steps so the head and tail cross boundaries apart.
        for (; next < TraceBuffer.ChunkEvents * 7 / 2; next++)
        {
            buffer.Add(Event(next));
        }
        foreach (var (trim, add) in new[] { (1_000, 10), (1_500, 2_000), (3, 1_021), (2_600, 0) })
        {
            for (var i = 0; i < trim; i++, oldest++)
            {
                Assert.Equal(oldest, buffer.Oldest.Job);
                Assert.Equal(oldest, buffer.RemoveOldest().Job);
            }
            for (var i = 0; i < add; i++, next++)
            {
                buffer.Add(Event(next));
            }
            Assert.Equal(next - oldest, buffer.Count);
            var expected = Enumerable.Range((int)oldest, (int)(next - oldest)).Select(j => (long)j).ToArray();
            Assert.Equal(expected, Jobs(buffer));
            Assert.Equal(expected, Jobs(buffer, skip: 3));
        }
    }

    [Fact]
    public void An_emptied_buffer_starts_over_and_an_empty_one_has_no_oldest_event()
    {
        var buffer = new TraceBuffer();
        Assert.Throws<InvalidOperationException>(() => buffer.Oldest);
        for (var round = 0; round < 3; round++)
        {
            for (var j = 0; j < TraceBuffer.ChunkEvents + 5; j++)
            {
                buffer.Add(Event(j));
            }
            while (buffer.Count > 0)
            {
                buffer.RemoveOldest();
            }
            Assert.Empty(Jobs(buffer));
            Assert.Throws<InvalidOperationException>(() => buffer.RemoveOldest());
        }
        buffer.Add(Event(42));
        Assert.Equal(42, Assert.Single(Jobs(buffer)));
    }
}
