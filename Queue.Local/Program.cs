using System.Globalization;
using Queue.Local;

// ./run.sh's database: `start-db [--dir .queue/db] [--port 5306] [--database queue]` starts (or reuses) a private
// MariaDB that outlives this command, creates the database, and prints its connection string on stdout.
// scripts/cluster.sh's: `start-cluster-db [--dir D] [--port P] [--replica-dir D2] [--replica-port P2] [--database queue]`
// starts (or reuses) a primary and its GTID replica and prints two lines: the primary's and the replica's connection
// strings.
if (args.Length == 0 || (args[0] != "start-db" && args[0] != "start-cluster-db"))
{
    await Console.Error.WriteLineAsync("usage: Queue.Local start-db [--dir DIR] [--port PORT] [--database NAME]\n"
        + "       Queue.Local start-cluster-db [--dir DIR] [--port PORT] [--replica-dir DIR] [--replica-port PORT] [--database NAME]");
    return 2;
}
string Option(string name, string fallback)
{
    var i = Array.IndexOf(args, name);
    return i >= 0 && i + 1 < args.Length ? args[i + 1] : fallback;
}
int Port(string name, string fallback) => int.Parse(Option(name, fallback), CultureInfo.InvariantCulture);
var database = Option("--database", "queue");
if (args[0] == "start-db")
{
    var db = await PrivateMariaDb.StartOrAttachAsync(Option("--dir", Path.Combine(".queue", "db")), Port("--port", "5306"), tiedToThisProcess: false);
    Console.WriteLine(await db.EnsureDatabaseAsync(database));
    return 0;
}
var pair = await ReplicatedMariaDb.StartOrAttachAsync(Option("--dir", Path.Combine(".queue", "cluster", "primary")), Port("--port", "5316"),
    Option("--replica-dir", Path.Combine(".queue", "cluster", "replica")), Port("--replica-port", "5317"), tiedToThisProcess: false);
Console.WriteLine(await pair.Primary.EnsureDatabaseAsync(database));
await pair.WaitCaughtUpAsync(TimeSpan.FromSeconds(30));
Console.WriteLine(pair.Replica.ConnectionStringFor(database));
return 0;
