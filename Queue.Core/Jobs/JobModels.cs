using System.Globalization;

namespace Queue.Core.Jobs;

/// <summary>Stored state numbers (docs/DESIGN.md) and their names in the contract.</summary>
public static class JobStates
{
    public const int Open = 0;
    public const int Closed = 1;
    public const int Done = 2;
    public const int Cancelled = 3;

    public static string Name(int state) => state switch
    {
        Open => "open",
        Closed => "closed",
        Done => "done",
        Cancelled => "cancelled",
        _ => "unknown",
    };

    public static int? Parse(string name) => name switch
    {
        "open" => Open,
        "closed" => Closed,
        "done" => Done,
        "cancelled" => Cancelled,
        _ => null,
    };
}

/// <summary>Stored item state numbers (docs/DESIGN.md "States") and their names in the contract.</summary>
public static class ItemStates
{
    public const int Ready = 0;
    public const int Leased = 1;
    public const int Done = 2;
    public const int Dead = 3;
    public const int Cancelled = 4;

    public static string Name(int state) => state switch
    {
        Ready => "ready",
        Leased => "leased",
        Done => "done",
        Dead => "dead",
        Cancelled => "cancelled",
        _ => "unknown",
    };

    public static int? Parse(string name) => name switch
    {
        "ready" => Ready,
        "leased" => Leased,
        "done" => Done,
        "dead" => Dead,
        "cancelled" => Cancelled,
        _ => null,
    };
}

/// <summary>The jobs row as stored.</summary>
public sealed record JobRow(
    long Id, long TenantId, string Name, sbyte State, string Tasks, sbyte Blocked, int Documents, long ItemsTotal,
    long ItemsDone, long ItemsDead, long ItemsCancelled, DateTime CreatedAt, DateTime? ClosedAt, DateTime? FinishedAt)
{
    public long Active => ItemsTotal - ItemsDone - ItemsDead - ItemsCancelled;

    public IReadOnlyList<string> TaskList => Tasks.Split(',', StringSplitOptions.RemoveEmptyEntries);
}

public sealed record ItemCounts(long Total, long Ready, long Leased, long Done, long Dead, long Cancelled);

/// <param name="Mode">smallest | oldest: the mode the value was set in (the current period's mode under an override).</param>
/// <param name="Value">The job's ordering value; null while the job has no lane (nothing left to hand out).</param>
public sealed record OrderingInfo(string Mode, long? Value, bool Override);

/// <summary>GET /jobs/{id} (docs/CONTRACT.md). Reused by the Admin UI and the explain endpoint.</summary>
public sealed record JobStatus(
    long Id, string Name, string State, DateTime CreatedAt, IReadOnlyList<string> Tasks, int Documents, ItemCounts Items,
    long? Position, bool PositionExact, OrderingInfo Ordering, DateTime? Eta);

public sealed record CreatedDocument(long Id, string Name, long Size, string Sha256);

public sealed record DocumentInfo(long Id, string Name, string ContentType, long Size, string Sha256, DateTime CreatedAt);

public sealed record ItemInfo(long Id, long DocumentId, string Task, string State, int Attempts, string? LastError, DateTime UpdatedAt);

public sealed record Page<T>(IReadOnlyList<T> Rows, string? Next);

/// <summary>A document of a new job whose bytes arrived inline (decoded from base64 by the caller).</summary>
public sealed record InlineDocument(string Name, string ContentType, byte[] Content);

/// <summary>A document arriving as a stream (raw body or one multipart section).</summary>
public sealed record IncomingDocument(string Name, string ContentType, Stream Body);

public sealed record NewJob(string Name, IReadOnlyList<string>? Tasks, bool Open, IReadOnlyList<InlineDocument> Documents);

public sealed record UploadResult(IReadOnlyList<CreatedDocument> Documents, long ItemsAdded);

public enum Outcome
{
    Ok,
    NotFound,
    Conflict,
}

/// <summary>Opaque, URL-safe paging cursors. A cursor that does not parse is a 400, never a silent first page.</summary>
public static class Cursor
{
    public static string Encode(params long[] parts) =>
        Convert.ToBase64String(System.Text.Encoding.ASCII.GetBytes(string.Join('.', parts.Select(p => p.ToString(CultureInfo.InvariantCulture)))))
            .TrimEnd('=').Replace('+', '-').Replace('/', '_');

    public static long[]? Decode(string cursor, int parts)
    {
        if (cursor.Length is 0 or > 200)
        {
            return null;
        }
        try
        {
            var b64 = cursor.Replace('-', '+').Replace('_', '/');
            b64 = b64.PadRight(b64.Length + ((4 - (b64.Length % 4)) % 4), '=');
            var text = System.Text.Encoding.ASCII.GetString(Convert.FromBase64String(b64));
            var split = text.Split('.');
            if (split.Length != parts)
            {
                return null;
            }
            var values = new long[parts];
            for (var i = 0; i < parts; i++)
            {
                if (!long.TryParse(split[i], NumberStyles.None, CultureInfo.InvariantCulture, out values[i]))
                {
                    return null;
                }
            }
            return values;
        }
        catch (FormatException)
        {
            return null;
        }
    }
}

/// <summary>A document or request over its size limit; the web layer answers 413.</summary>
public sealed class PayloadTooLargeException(string message) : Exception(message);
