namespace Queue.Core.Sql;

/// <summary>
/// The stored item states of docs/DESIGN.md "States" as SQL text: a state in a statement here is always one of these,
/// interpolated, never a bare number. Their C# twins are <see cref="Jobs.ItemStates"/> (a test holds them equal).
/// </summary>
public static class ItemStateSql
{
    public const string Ready = "0";
    public const string Leased = "1";
    public const string Done = "2";
    public const string Dead = "3";
    public const string Cancelled = "4";
}

/// <summary>The stored job states, likewise (<see cref="Jobs.JobStates"/>).</summary>
public static class JobStateSql
{
    public const string Open = "0";
    public const string Closed = "1";
    public const string Done = "2";
    public const string Cancelled = "3";
}

/// <summary>The stored states of an Idempotency-Key's record (<c>idempotency.state</c>).</summary>
public static class KeyStateSql
{
    public const string Running = "0";
    public const string Completed = "1";
}
