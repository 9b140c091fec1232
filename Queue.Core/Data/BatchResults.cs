using MySqlConnector;

namespace Queue.Core.Data;

/// <summary>
/// Walks the result sets of a <see cref="MySqlBatch"/> one statement at a time. Only statements that return rows have a
/// result set; the reader starts on the first, so "next" moves on from the second call only.
/// </summary>
internal sealed class BatchResults(MySqlDataReader reader)
{
    private bool started;

    public MySqlDataReader Reader { get; } = reader;

    /// <summary>Moves to the next statement's result set.</summary>
    public async Task NextAsync(CancellationToken ct)
    {
        if (started)
        {
            await Reader.NextResultAsync(ct);
        }
        started = true;
    }

    /// <summary>Moves to the next statement's result set and reads its first row; false when it has none.</summary>
    public async Task<bool> NextRowAsync(CancellationToken ct)
    {
        await NextAsync(ct);
        return await Reader.ReadAsync(ct);
    }

    /// <summary>The next statement's one value as a number (an id from <c>SELECT LAST_INSERT_ID()</c>, a MAX).</summary>
    public async Task<long> NextLongAsync(CancellationToken ct)
    {
        await NextRowAsync(ct);
        return Convert.ToInt64(Reader.GetValue(0), System.Globalization.CultureInfo.InvariantCulture);
    }
}
