namespace Queue.Core.Fairness;

/// <summary>
/// The fairness monitor's trace, oldest first: appended at one end, trimmed at the other, each in O(1) per event. It
/// holds its events in chunks of <see cref="ChunkEvents"/> (40 KiB, under the large object heap's 85,000 bytes), so it
/// grows and shrinks a chunk at a time: no array that doubles and is copied whole as the trace grows, and no copy of
/// the rest when the oldest events go. A <c>List</c> did both: at its cap, every claim removed its first events with
/// <c>RemoveRange(0, n)</c>, a move of the whole trace (20 MB) under the lock every <c>/next</c> takes
/// (docs/DESIGN.md "The fairness trace"). Not thread-safe: the monitor's lock guards it.
/// </summary>
public sealed class TraceBuffer
{
    /// <summary>Events per chunk: 1,024 of 40 bytes.</summary>
    public const int ChunkEvents = 1_024;

    private readonly Queue<TraceEvent[]> chunks = new();

    /// <summary>The chunk being written: the queue's last (Queue&lt;T&gt; has no accessor for it).</summary>
    private TraceEvent[]? newest;

    /// <summary>Index of the oldest event in the first chunk.</summary>
    private int head;

    /// <summary>Events written in <see cref="newest"/>.</summary>
    private int tail;

    public int Count { get; private set; }

    public void Add(TraceEvent e)
    {
        if (newest is null || tail == ChunkEvents)
        {
            newest = new TraceEvent[ChunkEvents];
            chunks.Enqueue(newest);
            tail = 0;
        }
        newest[tail++] = e;
        Count++;
    }

    /// <summary>The oldest event; the buffer must not be empty.</summary>
    public TraceEvent Oldest => Count > 0 ? chunks.Peek()[head] : throw new InvalidOperationException("the trace is empty");

    /// <summary>Removes and returns the oldest event; the buffer must not be empty.</summary>
    public TraceEvent RemoveOldest()
    {
        var e = Oldest;
        if (--Count == 0)
        {
            // Empty: the next event starts a fresh chunk.
            chunks.Clear();
            newest = null;
            head = 0;
        }
        else if (++head == ChunkEvents)
        {
            chunks.Dequeue();
            head = 0;
        }
        return e;
    }

    /// <summary>Copies the events, oldest first, into <paramref name="target"/> from <paramref name="index"/> on.</summary>
    public void CopyTo(TraceEvent[] target, int index)
    {
        ArgumentOutOfRangeException.ThrowIfGreaterThan(index + Count, target.Length);
        var left = Count;
        var from = head;
        foreach (var chunk in chunks)
        {
            var n = Math.Min(left, ChunkEvents - from);
            Array.Copy(chunk, from, target, index, n);
            index += n;
            left -= n;
            from = 0;
        }
    }
}
