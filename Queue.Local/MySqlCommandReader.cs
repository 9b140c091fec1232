using System.Text;

namespace Queue.Local;

/// <summary>
/// Follows the client's packets across reads. A command packet (sequence 0) of COM_QUERY (0x03) is returned with
/// its text once its last byte has been read; only the first 4 KiB and the last 64 bytes of the text are kept, which
/// is where a marker statement and a trailing COMMIT are.
/// </summary>
internal sealed class MySqlCommandReader
{
    private readonly byte[] header = new byte[4];
    private int headerFilled;
    private long payloadLeft;
    private bool isQuery;
    private long payloadSeen;
    private readonly List<byte> head = [];
    private readonly Queue<byte> tail = new();

    /// <summary>Consumes bytes up to the end of the current packet at most: how many, and the query it completed, if any.</summary>
    public (int Used, string? Query) Feed(ReadOnlySpan<byte> data)
    {
        var used = 0;
        while (headerFilled < 4 && used < data.Length)
        {
            header[headerFilled++] = data[used++];
            if (headerFilled == 4)
            {
                payloadLeft = header[0] | (header[1] << 8) | (header[2] << 16);
                payloadSeen = 0;
                head.Clear();
                tail.Clear();
                isQuery = false;
                if (payloadLeft == 0)
                {
                    headerFilled = 0;
                    return (used, null);
                }
            }
        }
        if (headerFilled < 4)
        {
            return (used, null);
        }
        var take = (int)Math.Min(payloadLeft, data.Length - used);
        foreach (var b in data.Slice(used, take))
        {
            if (payloadSeen == 0)
            {
                isQuery = header[3] == 0 && b == 0x03;
            }
            else if (isQuery)
            {
                if (head.Count < 4096)
                {
                    head.Add(b);
                }
                tail.Enqueue(b);
                if (tail.Count > 64)
                {
                    tail.Dequeue();
                }
            }
            payloadSeen++;
        }
        used += take;
        payloadLeft -= take;
        if (payloadLeft > 0)
        {
            return (used, null);
        }
        headerFilled = 0;
        if (!isQuery)
        {
            return (used, null);
        }
        var text = payloadSeen - 1 <= 4096
            ? Encoding.UTF8.GetString([.. head])
            : Encoding.UTF8.GetString([.. head]) + "\n" + Encoding.UTF8.GetString([.. tail]);
        return (used, text);
    }
}
