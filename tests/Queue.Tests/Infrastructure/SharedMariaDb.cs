using Queue.Local;

namespace Queue.Tests.Infrastructure;

/// <summary>
/// One throwaway mariadbd for the whole test run; each test class gets its own database in it. The server is tied to
/// this process, so it and its datadir are gone when the run ends, even after a crash.
/// </summary>
public static class SharedMariaDb
{
    private static readonly Lazy<Task<PrivateMariaDb>> Server = new(StartAsync);

    public static Task<PrivateMariaDb> GetAsync() => Server.Value;

    private static async Task<PrivateMariaDb> StartAsync()
    {
        var db = await PrivateMariaDb.StartEphemeralAsync("1G");
        AppDomain.CurrentDomain.ProcessExit += (_, _) => db.DisposeAsync().AsTask().GetAwaiter().GetResult();
        return db;
    }
}
