// A MapReduce-style application as a stock Hadoop client makes one: YarnClient submits it (type MAPREDUCE,
// an unmanaged AM, no job file), then this process is its ApplicationMaster over AMRMClient and asks for its
// maps at one priority, as MapReduce's AM does. Run in Java's single-file source mode with the Hadoop client
// jars on the class path (tests/e2e/test_slearn_stock.py):
//
//     java -cp CONF:JARS/* MapReduceStyleAm.java MAPS
//
// It prints "app <id>" once submitted, then "granted <n>" (containers so far) after every allocate call, and
// finishes the application (unregistering SUCCEEDED) when its standard input closes. Its containers are never
// launched: what is measured is what the RM grants.
import java.security.PrivilegedExceptionAction;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.security.AMRMTokenIdentifier;
import org.apache.hadoop.yarn.util.Records;

public class MapReduceStyleAm {
    public static void main(String[] args) throws Exception {
        final int maps = Integer.parseInt(args[0]);
        final YarnConfiguration conf = new YarnConfiguration();
        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        YarnClientApplication app = client.createApplication();
        ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
        final ApplicationId id = context.getApplicationId();
        context.setApplicationName("wordcount");
        context.setApplicationType("MAPREDUCE");
        context.setUnmanagedAM(true);
        context.setAMContainerSpec(Records.newRecord(ContainerLaunchContext.class));
        context.setResource(Resource.newInstance(512, 1));
        client.submitApplication(context);
        System.out.println("app " + id);
        System.out.flush();

        Token<AMRMTokenIdentifier> token = null;
        for (int i = 0; i < 600 && token == null; i++) {  // the RM hands it out once the attempt is launched
            token = client.getAMRMToken(id);
            if (token == null) {
                Thread.sleep(100);
            }
        }
        if (token == null) {
            throw new IllegalStateException("the RM never launched the unmanaged attempt of " + id);
        }
        UserGroupInformation am = UserGroupInformation.createRemoteUser(
            UserGroupInformation.getCurrentUser().getUserName());
        am.addToken(token);

        final AtomicBoolean done = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (Exception e) {
                // closed: finish
            }
            done.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();

        am.doAs((PrivilegedExceptionAction<Void>) () -> {
            AMRMClient<ContainerRequest> amrm = AMRMClient.createAMRMClient();
            amrm.init(conf);
            amrm.start();
            amrm.registerApplicationMaster("", 0, "");
            for (int i = 0; i < maps; i++) {  // MapReduce asks its maps at priority 20
                amrm.addContainerRequest(new ContainerRequest(Resource.newInstance(128, 1), null, null,
                                                              Priority.newInstance(20)));
            }
            int granted = 0;
            while (!done.get()) {
                AllocateResponse response = amrm.allocate(0.0f);
                granted += response.getAllocatedContainers().size();
                System.out.println("granted " + granted);
                System.out.flush();
                Thread.sleep(500);
            }
            amrm.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "", "");
            amrm.stop();
            return null;
        });
        client.stop();
    }
}
