using System.Globalization;
using Queue.Local;

// ./run.sh's database: `start-db [--dir .queue/db] [--port 5306] [--database queue]` starts (or reuses) a private
// MariaDB that outlives this command, creates the database, and prints its connection string on stdout.
if (args.Length == 0 || args[0] != "start-db")
{
    await Console.Error.WriteLineAsync("usage: Queue.Local start-db [--dir DIR] [--port PORT] [--database NAME]");
    return 2;
}
string Option(string name, string fallback)
{
    var i = Array.IndexOf(args, name);
    return i >= 0 && i + 1 < args.Length ? args[i + 1] : fallback;
}
var db = await PrivateMariaDb.StartOrAttachAsync(Option("--dir", Path.Combine(".queue", "db")),
    int.Parse(Option("--port", "5306"), CultureInfo.InvariantCulture), tiedToThisProcess: false);
Console.WriteLine(await db.EnsureDatabaseAsync(Option("--database", "queue")));
return 0;
